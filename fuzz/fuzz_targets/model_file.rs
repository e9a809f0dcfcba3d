//! An estimator model file on arbitrary text (TOML, or JSON when it starts with `{`): an error
//! or a checked model whose estimate is finite.
#![no_main]

use libfuzzer_sys::fuzz_target;
use smtsched_os::estimate::LinearModel;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let toml = !text.trim_start().starts_with('{');
    let _ = LinearModel::parse(text, toml);
});
