//! A QEMU TCG plugin that records what a guest's driver does to BCM57608 functions: every load
//! and store into their BARs, decoded as HWRM requests and the answers the driver then reads,
//! doorbells, MSI-X table writes, GRC windows and firmware status reads, written as a bnxt-rig
//! transcript (docs/transcripts.md, docs/qemu-trace.md) that `bnxt-rig diff` compares; the same
//! whether the function is the model behind `vfio-user-pci` or a real card behind `vfio-pci`.
//!
//! ```text
//! qemu-system-x86_64 -accel tcg ... \
//!   -plugin target/release/libbnxt_qemu_trace.so,out=guest.transcript,nic=00:05.0,kernel=6.12
//! ```
//!
//! The binding to QEMU's plugin API is [`api`]; the decoding is I/O-free ([`nic`], [`hwrm`],
//! [`pci`]) and tested without QEMU; [`plugin`] joins them in QEMU.

#![warn(unreachable_pub)]

pub mod api;
pub mod args;
pub mod events;
pub mod hwrm;
pub mod nic;
pub mod output;
pub mod pci;
pub mod plugin;

use std::ffi::{CStr, c_char, c_int};

/// The plugin API version this plugin is built for; QEMU reads it before installing.
#[unsafe(no_mangle)]
pub static qemu_plugin_version: c_int = api::API_VERSION;

/// QEMU's entry point: parse the arguments, open the files, register the callbacks. Returns 0,
/// or -1 after printing why on stderr (QEMU then refuses to start).
///
/// # Safety
/// QEMU calls it with `info` valid for the call and `argv` holding `argc` NUL-terminated strings.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn qemu_plugin_install(
    id: api::PluginId,
    info: *const api::Info,
    argc: c_int,
    argv: *const *const c_char,
) -> c_int {
    // SAFETY: QEMU passes `argc` valid C strings in `argv` (qemu-plugin.h, qemu_plugin_install).
    let args: Vec<String> = (0..usize::try_from(argc).unwrap_or(0))
        .map(|i| unsafe { CStr::from_ptr(*argv.add(i)) }.to_string_lossy().into_owned())
        .collect();
    // SAFETY: `info` is valid for the duration of this call.
    let system = !info.is_null() && unsafe { (*info).system_emulation };
    let result = if system {
        args::Config::parse(args.iter().map(String::as_str))
            .map_err(|e| e.to_string())
            .and_then(|c| plugin::install(id, c))
    } else {
        Err("the tracer needs full-system emulation (qemu-system-*)".to_string())
    };
    match result {
        Ok(()) => 0,
        Err(why) => {
            eprintln!("bnxt-qemu-trace: {why}");
            -1
        }
    }
}
