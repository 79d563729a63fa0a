//! gRPC status codes as loadrig's error classes: the table docs/targets.md shows.

use tonic::{Code, Status};

use crate::vocab::{ErrorClass, OpError};

/// Each status code's canonical name and the class its failures count under.
pub const CLASSES: [(Code, &str, ErrorClass); 16] = [
    (Code::Cancelled, "CANCELLED", ErrorClass::Other),
    (Code::Unknown, "UNKNOWN", ErrorClass::Other),
    // The server could not take the request as sent.
    (
        Code::InvalidArgument,
        "INVALID_ARGUMENT",
        ErrorClass::Protocol,
    ),
    (
        Code::DeadlineExceeded,
        "DEADLINE_EXCEEDED",
        ErrorClass::Timeout,
    ),
    (Code::NotFound, "NOT_FOUND", ErrorClass::Other),
    // What a store refuses for the state it is in, as a unique or check constraint.
    (
        Code::AlreadyExists,
        "ALREADY_EXISTS",
        ErrorClass::Constraint,
    ),
    (
        Code::PermissionDenied,
        "PERMISSION_DENIED",
        ErrorClass::Auth,
    ),
    (
        Code::ResourceExhausted,
        "RESOURCE_EXHAUSTED",
        ErrorClass::Other,
    ),
    (
        Code::FailedPrecondition,
        "FAILED_PRECONDITION",
        ErrorClass::Constraint,
    ),
    // A concurrency conflict, retried as a serialization failure is.
    (Code::Aborted, "ABORTED", ErrorClass::Serialization),
    (Code::OutOfRange, "OUT_OF_RANGE", ErrorClass::Constraint),
    // The server does not have the method: client and server disagree on the protocol.
    (Code::Unimplemented, "UNIMPLEMENTED", ErrorClass::Protocol),
    (Code::Internal, "INTERNAL", ErrorClass::Other),
    // The engine drops the connection and opens a new one.
    (Code::Unavailable, "UNAVAILABLE", ErrorClass::Connect),
    (Code::DataLoss, "DATA_LOSS", ErrorClass::Other),
    (Code::Unauthenticated, "UNAUTHENTICATED", ErrorClass::Auth),
];

/// The text of Go's `context.DeadlineExceeded`.
const GO_DEADLINE: &str = "context deadline exceeded";

/// A failed call as a counted error: its class, and its code's name with the server's
/// message.
pub fn op_error(status: &Status) -> OpError {
    let code = status.code();
    let (name, mut class) = CLASSES
        .iter()
        .find(|(c, _, _)| *c == code)
        .map_or(("OK", ErrorClass::Other), |(_, n, class)| (*n, *class));
    let message = status.message();
    // A server written in Go (etcd) answers UNKNOWN with the text of Go's expired context
    // when a handler returns that error unconverted: the deadline passed all the same.
    if code == Code::Unknown && message == GO_DEADLINE {
        class = ErrorClass::Timeout;
    }
    OpError::new(
        class,
        if message.is_empty() {
            name.to_string()
        } else {
            format!("{name}: {message}")
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_but_ok_has_a_class() {
        for n in 1..=16 {
            let code = Code::from_i32(n);
            assert!(CLASSES.iter().any(|(c, _, _)| *c == code), "{code:?}");
        }
        let e = op_error(&Status::unimplemented("unknown service x.Y"));
        assert_eq!(e.class, ErrorClass::Protocol);
        assert_eq!(e.message, "UNIMPLEMENTED: unknown service x.Y");
        assert_eq!(
            op_error(&Status::unavailable("")).class,
            ErrorClass::Connect
        );
        assert_eq!(
            op_error(&Status::deadline_exceeded("")).class,
            ErrorClass::Timeout
        );
        let go = op_error(&Status::unknown("context deadline exceeded"));
        assert_eq!(go.class, ErrorClass::Timeout);
        assert_eq!(go.message, "UNKNOWN: context deadline exceeded");
        assert_eq!(op_error(&Status::unknown("boom")).class, ErrorClass::Other);
    }
}
