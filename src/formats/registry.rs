//! The format registry: the descriptors in `templates/formats/formats.toml`, embedded in the
//! binary and checked once at first use.

use once_cell::sync::Lazy;
use serde::{Deserialize, Serialize};

use super::error::{FormatError, Result};

/// The descriptor file, as shipped.
pub const FORMATS_TOML: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/templates/formats/formats.toml"
));

/// How a format stores its numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FormatKind {
    /// Signed integers, one scale per `group` elements along K: `x = scale * q`.
    SymInt,
    /// Signed integers, one scale per output row: `x = scale[row] * q`.
    RowScaled,
    /// Unsigned integers with a scale and a min per group: `x = d * q + m` (GGUF Q4_1 style).
    Affine,
    /// Plain floating point values.
    Dense,
}

/// How scales are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScaleType {
    F16,
    F32,
    None,
}

impl ScaleType {
    /// Bytes one scale takes.
    pub fn bytes(self) -> usize {
        match self {
            ScaleType::F16 => 2,
            ScaleType::F32 => 4,
            ScaleType::None => 0,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            ScaleType::F16 => "f16",
            ScaleType::F32 => "f32",
            ScaleType::None => "none",
        }
    }
}

/// Element type of a dense format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DenseType {
    F32,
    F16,
    Bf16,
}

impl DenseType {
    pub fn bits(self) -> u32 {
        match self {
            DenseType::F32 => 32,
            DenseType::F16 | DenseType::Bf16 => 16,
        }
    }
}

/// One weight format's descriptor. Serialises (for the Tera context `fmt`) with the fields of
/// its `formats.toml` table plus `bits_per_weight`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Format {
    pub name: String,
    pub kind: FormatKind,
    /// Bits per stored value.
    pub bits: u32,
    /// Elements per scale along K; 0 means the whole row (row-scaled) or no scales (dense).
    pub group: usize,
    pub scale: ScaleType,
    /// Element type, dense formats only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dtype: Option<DenseType>,
    /// Storage per weight in bits, scales included (row-scaled: the per-row scale is not
    /// counted). Computed, not read from the file.
    #[serde(default)]
    pub bits_per_weight: f64,
}

impl Format {
    /// Largest stored integer: `2^(bits-1) - 1` for signed kinds, `2^bits - 1` for affine.
    pub fn qmax(&self) -> i32 {
        match self.kind {
            FormatKind::Affine => (1 << self.bits) - 1,
            _ => (1 << (self.bits - 1)) - 1,
        }
    }
    /// Smallest stored integer: `-2^(bits-1)` for signed kinds, 0 for affine.
    pub fn qmin(&self) -> i32 {
        match self.kind {
            FormatKind::Affine => 0,
            _ => -(1 << (self.bits - 1)),
        }
    }
    /// Elements that share one scale in a row of length `k`.
    pub fn group_len(&self, k: usize) -> usize {
        match self.kind {
            FormatKind::SymInt | FormatKind::Affine => self.group,
            FormatKind::RowScaled | FormatKind::Dense => k,
        }
    }
    /// Whether quantized values carry scales (everything but dense).
    pub fn is_quantized(&self) -> bool {
        self.kind != FormatKind::Dense
    }
    /// The template that defines the format's device functions, relative to `templates/`.
    pub fn template_path(&self) -> String {
        format!("formats/{}.cuh", self.name)
    }

    fn compute_bits_per_weight(&self) -> f64 {
        let sb = (self.scale.bytes() * 8) as f64;
        match self.kind {
            FormatKind::SymInt => self.bits as f64 + sb / self.group as f64,
            FormatKind::Affine => self.bits as f64 + 2.0 * sb / self.group as f64,
            FormatKind::RowScaled | FormatKind::Dense => self.bits as f64,
        }
    }

    fn validate(&self) -> std::result::Result<(), String> {
        let n = &self.name;
        if n.is_empty()
            || !n
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        {
            return Err(format!(
                "format name `{n}` must be non-empty lowercase letters, digits and underscores"
            ));
        }
        match self.kind {
            FormatKind::SymInt | FormatKind::Affine => {
                if !(2..=8).contains(&self.bits) {
                    return Err(format!(
                        "format `{n}`: bits must be 2..=8, not {}",
                        self.bits
                    ));
                }
                if self.group == 0 || !(self.group * self.bits as usize).is_multiple_of(32) {
                    return Err(format!(
                        "format `{n}`: group * bits must be a positive multiple of 32 (a group fills whole 32-bit words), not {} * {}",
                        self.group, self.bits
                    ));
                }
                if self.scale == ScaleType::None {
                    return Err(format!(
                        "format `{n}`: a quantized format needs a scale type"
                    ));
                }
                if self.kind == FormatKind::Affine && self.scale != ScaleType::F16 {
                    return Err(format!(
                        "format `{n}`: affine formats store f16 scale and min"
                    ));
                }
            }
            FormatKind::RowScaled => {
                if self.bits != 8 {
                    return Err(format!("format `{n}`: row-scaled formats are 8-bit"));
                }
                if self.group != 0 || self.scale == ScaleType::None {
                    return Err(format!(
                        "format `{n}`: row-scaled formats have group = 0 and a scale type"
                    ));
                }
            }
            FormatKind::Dense => {
                let Some(dt) = self.dtype else {
                    return Err(format!("format `{n}`: dense formats need a dtype"));
                };
                if dt.bits() != self.bits || self.group != 0 || self.scale != ScaleType::None {
                    return Err(format!(
                        "format `{n}`: a dense format has bits equal to its dtype's, group = 0 and scale = \"none\""
                    ));
                }
            }
        }
        if self.kind != FormatKind::Dense && self.dtype.is_some() {
            return Err(format!("format `{n}`: only dense formats have a dtype"));
        }
        Ok(())
    }
}

/// Every format the engine knows, in file order.
#[derive(Debug, Clone)]
pub struct FormatRegistry {
    formats: Vec<Format>,
}

#[derive(Deserialize)]
struct FormatsFile {
    format: Vec<Format>,
}

impl FormatRegistry {
    /// Parses and checks a descriptor file.
    pub fn from_toml(text: &str) -> Result<Self> {
        let file: FormatsFile =
            toml::from_str(text).map_err(|e| FormatError::Registry(e.to_string()))?;
        let mut formats = file.format;
        for f in formats.iter_mut() {
            f.validate().map_err(FormatError::Registry)?;
            f.bits_per_weight = f.compute_bits_per_weight();
        }
        for (i, f) in formats.iter().enumerate() {
            if formats[..i].iter().any(|g| g.name == f.name) {
                return Err(FormatError::Registry(format!(
                    "format `{}` is listed twice",
                    f.name
                )));
            }
        }
        Ok(FormatRegistry { formats })
    }

    /// The format called `name`, or an error that lists the known ones.
    pub fn get(&self, name: &str) -> Result<&Format> {
        self.formats
            .iter()
            .find(|f| f.name == name)
            .ok_or_else(|| FormatError::UnknownFormat {
                name: name.to_string(),
                known: self.names().join(", "),
            })
    }

    pub fn names(&self) -> Vec<&str> {
        self.formats.iter().map(|f| f.name.as_str()).collect()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Format> {
        self.formats.iter()
    }
}

static REGISTRY: Lazy<FormatRegistry> = Lazy::new(|| {
    FormatRegistry::from_toml(FORMATS_TOML).unwrap_or_else(|e| {
        panic!("templates/formats/formats.toml shipped in this binary is invalid: {e}")
    })
});

/// The registry of the embedded `formats.toml`.
pub fn registry() -> &'static FormatRegistry {
    &REGISTRY
}

/// Shorthand for `registry().get(name)`.
pub fn format(name: &str) -> Result<&'static Format> {
    registry().get(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_registry_parses_with_the_seed_formats() {
        let r = registry();
        for name in [
            "q8_g32", "q6_g64", "q4_g64", "i8_row", "q4_1_g32", "bf16", "f16", "f32",
        ] {
            r.get(name).unwrap();
        }
        assert_eq!(format("q8_g32").unwrap().bits_per_weight, 8.5);
        assert_eq!(format("q6_g64").unwrap().bits_per_weight, 6.25);
        assert_eq!(format("q4_g64").unwrap().bits_per_weight, 4.25);
        assert_eq!(format("q4_1_g32").unwrap().bits_per_weight, 5.0);
        assert_eq!(format("i8_row").unwrap().bits_per_weight, 8.0);
        assert_eq!(format("bf16").unwrap().bits_per_weight, 16.0);
    }

    #[test]
    fn unknown_name_is_an_error_listing_known_names() {
        let e = registry().get("q9_g7").unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("q9_g7") && msg.contains("q4_g64"), "{msg}");
    }

    #[test]
    fn bad_descriptors_are_rejected() {
        for bad in [
            r#"format = [{ name = "x", kind = "sym_int", bits = 4, group = 12, scale = "f16" }]"#,
            r#"format = [{ name = "x", kind = "sym_int", bits = 9, group = 32, scale = "f16" }]"#,
            r#"format = [{ name = "x", kind = "dense", bits = 8, group = 0, scale = "none", dtype = "f16" }]"#,
            r#"format = [{ name = "x", kind = "sym_int", bits = 4, group = 64, scale = "f16" }, { name = "x", kind = "sym_int", bits = 4, group = 64, scale = "f16" }]"#,
            r#"format = [{ name = "X y", kind = "sym_int", bits = 4, group = 64, scale = "f16" }]"#,
            r#"format = [{ name = "x", kind = "what", bits = 4, group = 64, scale = "f16" }]"#,
        ] {
            assert!(
                matches!(
                    FormatRegistry::from_toml(bad),
                    Err(FormatError::Registry(_))
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn serialises_for_the_template_context() {
        let v = serde_json::to_value(format("q4_g64").unwrap()).unwrap();
        assert_eq!(v["bits"], 4);
        assert_eq!(v["group"], 64);
        assert_eq!(v["kind"], "sym_int");
        assert_eq!(v["scale"], "f16");
        assert_eq!(v["name"], "q4_g64");
    }
}
