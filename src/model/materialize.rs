//! The materializer: fills one arena from a [`WeightPlan`], converting or transcoding each
//! tensor from the model file into its planned format at its planned offset.
//!
//! The arena is a host `Vec<u8>` for now (the GPU upload of the same bytes comes with the CUDA
//! backend). It is allocated once, zeroed, at the plan's size; every tensor's target bytes are
//! written before [`materialize`] returns, and nothing can see the arena before that, so no
//! reader ever observes a tensor in its stored (pre-conversion) form. Each conversion checks
//! that it produced exactly the planned number of bytes.
//!
//! Tensors are written in parallel (rayon), each into its own disjoint slice of the arena; the
//! conversions themselves are parallel over rows. A conversion needs scratch of one tensor's
//! target size (the `q8_g32` intermediate for a transcode, the converted payload otherwise).

use rayon::prelude::*;

use crate::formats::{self, gguf_blocks};
use crate::model::binder::{BindError, Conversion, PlannedTensor, WeightPlan};
use crate::model::{TensorDtype, Weights};

/// The materialized weights: the arena and the plan that places tensors in it.
#[derive(Debug)]
pub struct Materialized {
    arena: Vec<u8>,
    plan: WeightPlan,
    /// Bytes each owning entry's conversion produced (0 for shared entries), by plan index.
    written: Vec<usize>,
}

impl Materialized {
    /// The whole arena.
    pub fn arena(&self) -> &[u8] {
        &self.arena
    }

    pub fn plan(&self) -> &WeightPlan {
        &self.plan
    }

    /// The tensor called `name` and its bytes.
    pub fn tensor(&self, name: &str) -> Option<(&PlannedTensor, &[u8])> {
        let t = self.plan.get(name)?;
        Some((t, &self.arena[t.range()]))
    }

    /// Bytes the conversions wrote, each tensor once (shared entries not counted again).
    pub fn written_bytes(&self) -> usize {
        self.written.iter().sum()
    }

    /// Bytes written for the entry called `name` (for a shared entry: its owner's).
    pub fn written_for(&self, name: &str) -> Option<usize> {
        let i = self.plan.tensors.iter().position(|t| t.name == name)?;
        let owner = self.plan.tensors[i].shared_with.unwrap_or(i);
        Some(self.written[owner])
    }

    /// Bits per weight as materialized: the bytes written for `name` over its values.
    pub fn bits_per_weight(&self, name: &str) -> Option<f64> {
        let t = self.plan.get(name)?;
        Some(self.written_for(name)? as f64 * 8.0 / t.elements().max(1) as f64)
    }

    pub fn into_parts(self) -> (Vec<u8>, WeightPlan) {
        (self.arena, self.plan)
    }
}

/// Converts one tensor into `dst` (exactly its planned size); returns the bytes produced.
fn write_tensor(t: &PlannedTensor, weights: &Weights, dst: &mut [u8]) -> Result<usize, BindError> {
    let path = weights.path().to_path_buf();
    let src = weights
        .tensor(&t.source)
        .ok_or_else(|| BindError::Missing {
            path: path.clone(),
            name: t.source.clone(),
        })?;
    let same_type = match src.dtype {
        TensorDtype::Ggml(id) => id == t.source_type.id(),
        TensorDtype::Safetensors(d) => matches!(
            (d, t.source_type),
            (safetensors::Dtype::F32, formats::GgufType::F32)
                | (safetensors::Dtype::F16, formats::GgufType::F16)
                | (safetensors::Dtype::BF16, formats::GgufType::BF16)
        ),
    };
    if src.shape != t.shape || !same_type {
        return Err(BindError::SourceChanged {
            path,
            name: t.source.clone(),
        });
    }
    let fmt_err = |format: &str, source| BindError::Format {
        path: path.clone(),
        name: t.name.clone(),
        format: format.to_string(),
        source: Box::new(source),
    };
    let produced = match t.conversion {
        Conversion::Convert => {
            let out = gguf_blocks::to_format(t.source_type, &src.data, t.n, t.k, t.format)
                .map_err(|e| fmt_err(&t.format.name, e))?;
            if out.len() != dst.len() {
                return Err(BindError::SizeMismatch {
                    name: t.name.clone(),
                    planned: dst.len(),
                    actual: out.len(),
                });
            }
            dst.copy_from_slice(&out);
            out.len()
        }
        Conversion::TranscodeFromQ8 => {
            let q8 = formats::format("q8_g32").map_err(|e| fmt_err("q8_g32", e))?;
            let mid = gguf_blocks::to_format(t.source_type, &src.data, t.n, t.k, q8)
                .map_err(|e| fmt_err("q8_g32", e))?;
            // Checks that `dst` is exactly the target layout's size.
            formats::transcode_q8_g32_into(&mid, t.n, t.k, t.format, dst)
                .map_err(|e| fmt_err(&t.format.name, e))?;
            dst.len()
        }
    };
    Ok(produced)
}

/// Materializes `plan` from `weights` (the weights it was planned from).
pub fn materialize(plan: WeightPlan, weights: &Weights) -> Result<Materialized, BindError> {
    materialize_with_progress(plan, weights, &|_| {})
}

/// Like [`materialize`], calling `progress` after each tensor is written (from any thread),
/// e.g. to advance an indicatif bar.
pub fn materialize_with_progress(
    plan: WeightPlan,
    weights: &Weights,
    progress: &(dyn Fn(&PlannedTensor) + Sync),
) -> Result<Materialized, BindError> {
    let mut arena = vec![0u8; plan.arena_bytes];
    // Owning entries by offset, each with its own disjoint slice of the arena.
    let mut owners: Vec<usize> = (0..plan.tensors.len())
        .filter(|&i| plan.tensors[i].shared_with.is_none())
        .collect();
    owners.sort_by_key(|&i| plan.tensors[i].offset);
    let mut jobs: Vec<(usize, &mut [u8])> = Vec::with_capacity(owners.len());
    let mut rest: &mut [u8] = &mut arena;
    let mut base = 0usize;
    for &i in &owners {
        let t = &plan.tensors[i];
        let end = t.offset + t.bytes;
        if t.offset < base || end > plan.arena_bytes {
            return Err(BindError::SizeMismatch {
                name: t.name.clone(),
                planned: t.bytes,
                actual: plan.arena_bytes.saturating_sub(t.offset),
            });
        }
        let (_, tail) = std::mem::take(&mut rest).split_at_mut(t.offset - base);
        let (mine, tail) = tail.split_at_mut(t.bytes);
        jobs.push((i, mine));
        rest = tail;
        base = end;
    }
    let results: Vec<(usize, usize)> = jobs
        .into_par_iter()
        .map(|(i, dst)| {
            let t = &plan.tensors[i];
            let n = write_tensor(t, weights, dst)?;
            progress(t);
            Ok((i, n))
        })
        .collect::<Result<_, BindError>>()?;
    let mut written = vec![0usize; plan.tensors.len()];
    for (i, n) in results {
        written[i] = n;
    }
    Ok(Materialized {
        arena,
        plan,
        written,
    })
}
