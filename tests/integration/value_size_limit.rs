//! A generated value is at most 64 MiB (`{bytes N}`, `{string N}`): a larger size is an
//! error at its file:line:column, exit status 2, before anything runs or is written. The
//! fuzzer's workload target found `{bytes 051663333}`, a 51 MB value drawn per operation,
//! which is allowed and merely slow; the limit stops sizes that would exhaust memory.

use crate::common::Dir;

const OVER: &str = "name = \"big\"\ndescription = \"one value too large\"\n\
[[op]]\nname = \"put\"\nkv.put = { key = \"k{seq}\", value = \"v{bytes 67108865}\" }\n";

#[test]
fn a_value_over_64_mib_is_refused_at_its_position() {
    let d = Dir::new();
    d.write("big.toml", OVER);
    let (_, err) = d.code(
        2,
        &[
            "run", "big.toml", "--target", "noop", "--ops", "1", "-o", "r.json",
        ],
    );
    // Line 5, the size's column inside the string value.
    assert!(err.contains("big.toml:5:45: "), "{err}");
    assert!(err.contains("size over 64 MiB"), "{err}");
    assert_eq!(d.files(), ["big.toml"], "nothing written");

    let text = OVER.replace("v{bytes 67108865}", "{string 70000000}");
    d.write("big.toml", &text);
    let (_, err) = d.code(
        2,
        &[
            "run", "big.toml", "--target", "noop", "--ops", "1", "-o", "r.json",
        ],
    );
    assert!(
        err.contains("big.toml:5:45: ") && err.contains("size over 64 MiB"),
        "{err}"
    );
    assert_eq!(d.files(), ["big.toml"], "nothing written");
}
