//! Money: integer minor units and an ISO 4217 currency, rendered as text.
//!
//! Amounts never cross the MCP boundary as minor units: a client reading
//! `1250` cannot know whether that is 12.50 EUR, 1,250 JPY or 1.250 KWD.
//! The decimal places come from ISO 4217, so only listed currencies are
//! accepted; an unknown code is refused when stored rather than guessed at
//! when shown.

/// ISO 4217 codes whose minor unit is not 2 decimal places.
const EXPONENTS: &[(&str, u32)] = &[
    ("BIF", 0),
    ("CLP", 0),
    ("DJF", 0),
    ("GNF", 0),
    ("ISK", 0),
    ("JPY", 0),
    ("KMF", 0),
    ("KRW", 0),
    ("PYG", 0),
    ("RWF", 0),
    ("UGX", 0),
    ("UYI", 0),
    ("VND", 0),
    ("VUV", 0),
    ("XAF", 0),
    ("XOF", 0),
    ("XPF", 0),
    ("BHD", 3),
    ("IQD", 3),
    ("JOD", 3),
    ("KWD", 3),
    ("LYD", 3),
    ("OMR", 3),
    ("TND", 3),
    ("CLF", 4),
    ("UYW", 4),
];

/// ISO 4217 active codes with 2 decimal places.
const TWO_DECIMALS: &[&str] = &[
    "AED", "AFN", "ALL", "AMD", "ANG", "AOA", "ARS", "AUD", "AWG", "AZN", "BAM", "BBD", "BDT",
    "BGN", "BMD", "BND", "BOB", "BOV", "BRL", "BSD", "BTN", "BWP", "BYN", "BZD", "CAD", "CDF",
    "CHE", "CHF", "CHW", "CNY", "COP", "COU", "CRC", "CUC", "CUP", "CVE", "CZK", "DKK", "DOP",
    "DZD", "EGP", "ERN", "ETB", "EUR", "FJD", "FKP", "GBP", "GEL", "GHS", "GIP", "GMD", "GTQ",
    "GYD", "HKD", "HNL", "HTG", "HUF", "IDR", "ILS", "INR", "IRR", "JMD", "KES", "KGS", "KHR",
    "KPW", "KYD", "KZT", "LAK", "LBP", "LKR", "LRD", "LSL", "MAD", "MDL", "MGA", "MKD", "MMK",
    "MNT", "MOP", "MRU", "MUR", "MVR", "MWK", "MXN", "MXV", "MYR", "MZN", "NAD", "NGN", "NIO",
    "NOK", "NPR", "NZD", "PAB", "PEN", "PGK", "PHP", "PKR", "PLN", "QAR", "RON", "RSD", "RUB",
    "SAR", "SBD", "SCR", "SDG", "SEK", "SGD", "SHP", "SLE", "SOS", "SRD", "SSP", "STN", "SVC",
    "SYP", "SZL", "THB", "TJS", "TMT", "TOP", "TRY", "TTD", "TWD", "TZS", "UAH", "USD", "USN",
    "UYU", "UZS", "VED", "VES", "WST", "XCD", "XCG", "YER", "ZAR", "ZMW", "ZWG",
];

/// A listed ISO 4217 currency.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Currency {
    code: &'static str,
    exponent: u32,
}

impl Currency {
    /// Accepts a listed code, in any case.
    pub fn parse(raw: &str) -> Result<Self, String> {
        let upper = raw.trim().to_ascii_uppercase();
        if let Some((code, exponent)) = EXPONENTS.iter().find(|(c, _)| *c == upper) {
            return Ok(Self {
                code,
                exponent: *exponent,
            });
        }
        if let Some(code) = TWO_DECIMALS.iter().find(|c| **c == upper) {
            return Ok(Self { code, exponent: 2 });
        }
        Err(format!(
            "{raw:?} is not an ISO 4217 currency code Coop knows"
        ))
    }

    pub fn code(self) -> &'static str {
        self.code
    }

    /// Decimal places of the minor unit.
    pub fn exponent(self) -> u32 {
        self.exponent
    }
}

/// An amount in minor units of a currency. `i128` so that quantity × unit
/// cost of two `i64`s cannot overflow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Money {
    minor: i128,
    currency: Currency,
}

impl Money {
    pub fn from_minor(minor: i128, currency: Currency) -> Self {
        Self { minor, currency }
    }

    /// This amount times a count (a stock line's value).
    pub fn times(self, count: i64) -> Option<Self> {
        self.minor.checked_mul(i128::from(count)).map(|minor| Self {
            minor,
            currency: self.currency,
        })
    }

    pub fn currency(self) -> Currency {
        self.currency
    }
}

/// `12.50 EUR`, `1250 JPY`, `1.250 KWD`, `-0.05 USD`.
impl std::fmt::Display for Money {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let sign = if self.minor < 0 { "-" } else { "" };
        let abs = self.minor.unsigned_abs();
        let exponent = self.currency.exponent;
        let code = self.currency.code;
        if exponent == 0 {
            return write!(f, "{sign}{abs} {code}");
        }
        let scale = 10u128.pow(exponent);
        let (units, cents) = (abs / scale, abs % scale);
        let width = exponent as usize;
        write!(f, "{sign}{units}.{cents:0width$} {code}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn money(minor: i128, code: &str) -> String {
        Money::from_minor(minor, Currency::parse(code).unwrap()).to_string()
    }

    #[test]
    fn amounts_render_with_the_currency_s_decimal_places() {
        assert_eq!(money(1250, "EUR"), "12.50 EUR");
        assert_eq!(money(5, "usd"), "0.05 USD");
        assert_eq!(money(0, "GBP"), "0.00 GBP");
        assert_eq!(money(-5, "USD"), "-0.05 USD");
        assert_eq!(money(1250, "JPY"), "1250 JPY");
        assert_eq!(money(1250, "KWD"), "1.250 KWD");
        assert_eq!(money(7, "BHD"), "0.007 BHD");
        assert_eq!(money(12345, "CLF"), "1.2345 CLF");
    }

    #[test]
    fn values_multiply_without_overflow_and_unknown_codes_are_refused() {
        let eur = Currency::parse("EUR").unwrap();
        let value = Money::from_minor(i128::from(i64::MAX), eur).times(i64::MAX);
        assert!(value.is_some());
        assert_eq!(
            Money::from_minor(250, eur).times(4).unwrap().to_string(),
            "10.00 EUR"
        );
        for bad in ["XYZ", "EU", "EURO", "", "XAU"] {
            assert!(Currency::parse(bad).is_err(), "{bad:?}");
        }
    }
}
