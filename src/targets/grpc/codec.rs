//! The tonic codec of the grpc target: requests are [`DynamicMessage`]s built from the
//! workload's descriptors; replies are decoded only when something reads them (a capture,
//! the kv operations' counts), else only counted, since decoding a message nobody reads
//! is client CPU taken from the server on a shared machine.

use bytes::Buf;
use prost::Message;
use prost_reflect::{DynamicMessage, MessageDescriptor};
use tonic::codec::{BufferSettings, Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::Status;

/// Encodes dynamic requests; decodes replies as `reply` (or not at all).
pub struct DynamicCodec {
    /// The reply's type, when its fields are read.
    pub reply: Option<MessageDescriptor>,
}

/// A reply: its fields, when they were decoded.
pub type Reply = Option<DynamicMessage>;

/// Buffers per call: the default 8 KiB is allocated for every call and is many times what
/// a key-value request or reply holds; larger messages grow it.
fn buffers() -> BufferSettings {
    BufferSettings::new(1024, 32 * 1024)
}

impl Codec for DynamicCodec {
    type Encode = DynamicMessage;
    type Decode = Reply;
    type Encoder = RequestEncoder;
    type Decoder = ReplyDecoder;

    fn encoder(&mut self) -> RequestEncoder {
        RequestEncoder
    }

    fn decoder(&mut self) -> ReplyDecoder {
        ReplyDecoder(self.reply.take())
    }
}

pub struct RequestEncoder;

impl Encoder for RequestEncoder {
    type Item = DynamicMessage;
    type Error = Status;

    fn encode(&mut self, item: DynamicMessage, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        // EncodeBuf grows as needed, so encoding cannot run out of room.
        item.encode(dst)
            .map_err(|e| Status::internal(format!("encoding the request: {e}")))
    }

    fn buffer_settings(&self) -> BufferSettings {
        buffers()
    }
}

pub struct ReplyDecoder(Option<MessageDescriptor>);

impl Decoder for ReplyDecoder {
    type Item = Reply;
    type Error = Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Reply>, Status> {
        match &self.0 {
            Some(desc) => DynamicMessage::decode(desc.clone(), src)
                .map(|m| Some(Some(m)))
                .map_err(|e| {
                    Status::internal(format!("a reply that is not a {}: {e}", desc.full_name()))
                }),
            None => {
                src.advance(src.remaining());
                Ok(Some(None))
            }
        }
    }

    fn buffer_settings(&self) -> BufferSettings {
        buffers()
    }
}
