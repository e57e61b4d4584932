//! Reading the pages' forms that carry a repeated field (the consent
//! screen's scopes, a worker's flocks), where serde's one-value-per-name
//! forms do not fit: every other field must appear at most once.

use crate::http::error::PageError;
use crate::oauth::params::Params;

/// The one value of `name`, "" when absent; a repeated field is a 400 page.
pub fn single<'a>(params: &'a Params, name: &'static str) -> Result<&'a str, PageError> {
    params
        .single(name)
        .map(Option::unwrap_or_default)
        .map_err(|_| PageError::BadRequest(format!("The form field {name} is repeated.")))
}

/// The one values of several fields, in the order named (see [`single`]).
pub fn singles<'a, const N: usize>(
    params: &'a Params,
    names: [&'static str; N],
) -> Result<[&'a str; N], PageError> {
    let mut values = [""; N];
    for (value, name) in values.iter_mut().zip(names) {
        *value = single(params, name)?;
    }
    Ok(values)
}
