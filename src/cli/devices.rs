//! `ninfer devices`: what the driver sees, and what the engine would compile for.

use super::CliError;
use crate::gpu::{list_devices, GpuError};
use crate::jit::{nvrtc, Jit};
use crate::tune::Fingerprint;

#[derive(Debug, clap::Args)]
pub struct DevicesArgs {
    /// Print one JSON object per device instead of the table.
    #[arg(long)]
    pub json: bool,
}

fn gib(b: u64) -> String {
    format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64)
}

fn mib(b: u64) -> String {
    format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64)
}

pub fn run(args: &DevicesArgs) -> Result<(), CliError> {
    let nvrtc_version = nvrtc::version().ok();
    let template_hash = Jit::global()?.templates().hash().to_string();
    let devices = match list_devices() {
        Ok(d) => d,
        Err(e @ (GpuError::NoDriver | GpuError::NoDevice)) => {
            println!("{e}.");
            match nvrtc_version {
                Some((a, b)) => println!("NVRTC {a}.{b} is available: kernels can still be built with `ninfer kernels build --arch sm_XY`."),
                None => println!("NVRTC is not available either."),
            }
            return Ok(());
        }
        Err(e) => return Err(e.into()),
    };
    for d in &devices {
        let fingerprint = nvrtc_version.map(|v| Fingerprint::of(d, v, &template_hash));
        if args.json {
            let mut obj = serde_json::to_value(d).expect("props serialise");
            obj["arch"] = d.arch().to_string().into();
            obj["fingerprint"] = fingerprint.as_ref().map(|f| f.id()).into();
            println!("{obj}");
            continue;
        }
        let (ma, mi) = d.compute_capability;
        println!("GPU {}: {}", d.ordinal, d.name);
        println!("  compute capability   {ma}.{mi} (target {})", d.arch());
        println!("  SMs                  {}", d.sm_count);
        println!(
            "  memory               {} ({}-bit bus)",
            gib(d.total_memory),
            d.memory_bus_bits
        );
        println!("  L2 cache             {}", mib(d.l2_bytes));
        println!(
            "  shared memory        {} KiB per block (opt-in), {} KiB per SM",
            d.smem_per_block_optin / 1024,
            d.smem_per_sm / 1024
        );
        println!(
            "  CUDA driver          {}.{}",
            d.driver_version.0, d.driver_version.1
        );
        match d.nvrtc_version {
            Some((a, b)) => println!("  NVRTC                {a}.{b}"),
            None => println!("  NVRTC                not found (kernels cannot be compiled)"),
        }
        if let Some(f) = fingerprint {
            println!("  fingerprint          {}", f.id());
        }
    }
    Ok(())
}
