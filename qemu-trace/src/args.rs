//! The plugin's arguments (`-plugin libbnxt_qemu_trace.so,out=PATH,nic=00:05.0,...`).
//!
//! | argument | meaning |
//! |---|---|
//! | `out=PATH` | the transcript (required); refused if PATH is a symlink |
//! | `accesses=PATH` | every BAR load and store, one a line (default: PATH of `out` with `.accesses`) |
//! | `nic=BB:DD.F` | a BCM57608 function at that guest PCI address (repeat for more; the first is `drv0`) |
//! | `bar=BB:DD.F/N/ADDR` | BAR N of that function is at ADDR (else it is learnt from the guest's config-space writes) |
//! | `size=N/SIZE` | BAR N is SIZE bytes (default: the model's, 64 KiB, 8 MiB and 16 KiB for BARs 0, 2, 4) |
//! | `msix=N/OFFSET/COUNT` | the MSI-X table: BAR, offset, entries (default `4/0/128`, the model's) |
//! | `ecam=ADDR` or `ecam=off` | the memory-mapped config space (default 0xb0000000, QEMU q35's) |
//! | `code=kernel` or `code=all` | whose accesses are watched: code in the upper half of the address space (an x86-64 kernel and its modules; the default) or all code (a driver in guest user space, through vfio) |
//! | `watch=bus-master` or `watch=always` | when memory accesses start being watched: once the guest enables bus mastering on a traced function (the default: bnxt_en, bnxt_re and vfio-pci touch no BAR before; the guest boots at full speed until then) or from the start |
//! | `kernel=TEXT`, `device=TEXT` | what the transcript's header names as the guest kernel and the device |

use std::path::PathBuf;

/// One function to trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NicArg {
    /// Guest PCI bus, device, function.
    pub bdf: (u8, u8, u8),
    /// BAR bases given on the command line, by BAR index (0..6).
    pub bars: [Option<u64>; 6],
}

/// Where a function's MSI-X table is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MsixTable {
    /// The BAR.
    pub bar: u8,
    /// Its offset in the BAR.
    pub offset: u64,
    /// Entries.
    pub entries: u64,
}

/// Everything the arguments say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// The transcript.
    pub out: PathBuf,
    /// The access log.
    pub accesses: PathBuf,
    /// The functions.
    pub nics: Vec<NicArg>,
    /// BAR sizes by index.
    pub sizes: [u64; 6],
    /// The MSI-X table.
    pub msix: MsixTable,
    /// The ECAM window's base, if any.
    pub ecam: Option<u64>,
    /// Watch the accesses of all code, not only the kernel's.
    pub all_code: bool,
    /// Watch memory accesses from the start, not from the first bus-master enable.
    pub watch_always: bool,
    /// The guest kernel, for the header.
    pub kernel: String,
    /// The device, for the header.
    pub device: String,
}

/// The most functions one plugin traces.
pub const MAX_NICS: usize = 8;

/// An argument the plugin does not take.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArgError {
    /// Not `name=value`.
    #[error("argument `{0}` is not name=value")]
    NotNameValue(String),
    /// A name the plugin does not know.
    #[error("unknown argument `{0}` (known: out, accesses, nic, bar, size, msix, ecam, code, watch, kernel, device)")]
    Unknown(String),
    /// A value that does not parse.
    #[error("argument `{name}`: `{value}` is not {what}")]
    BadValue {
        /// The argument.
        name: String,
        /// Its value.
        value: String,
        /// What it should be.
        what: &'static str,
    },
    /// Something required is missing.
    #[error("missing argument: {0}")]
    Missing(&'static str),
    /// `bar=` names a function no `nic=` names.
    #[error("argument `bar={0}` names a function that no `nic=` names")]
    BarWithoutNic(String),
    /// Too many `nic=`.
    #[error("at most {MAX_NICS} `nic=` arguments")]
    TooManyNics,
}

fn bad(name: &str, value: &str, what: &'static str) -> ArgError {
    ArgError::BadValue { name: name.into(), value: value.into(), what }
}

/// A number written in decimal or with `0x`.
pub fn number(text: &str) -> Option<u64> {
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

/// `BB:DD.F` (hexadecimal, as lspci writes it; a leading `0000:` domain is accepted).
pub fn bdf(text: &str) -> Option<(u8, u8, u8)> {
    let text = text.strip_prefix("0000:").unwrap_or(text);
    let (bus, rest) = text.split_once(':')?;
    let (dev, func) = rest.split_once('.')?;
    let bus = u8::from_str_radix(bus, 16).ok()?;
    let dev = u8::from_str_radix(dev, 16).ok().filter(|d| *d < 32)?;
    let func = u8::from_str_radix(func, 16).ok().filter(|f| *f < 8)?;
    Some((bus, dev, func))
}

fn bar_index(name: &str, text: &str) -> Result<usize, ArgError> {
    number(text).filter(|n| *n < 6).map(|n| n as usize).ok_or_else(|| bad(name, text, "a BAR index 0..5"))
}

impl Config {
    /// Parse QEMU's `name=value` arguments.
    pub fn parse<'a>(args: impl IntoIterator<Item = &'a str>) -> Result<Config, ArgError> {
        let mut out = None;
        let mut accesses = None;
        let mut nics: Vec<NicArg> = Vec::new();
        let mut bars = Vec::new();
        let mut sizes = [0x1_0000, 0, 0x80_0000, 0, 0x4000, 0];
        let mut msix = MsixTable { bar: 4, offset: 0, entries: 128 };
        let mut ecam = Some(0xb000_0000);
        let mut all_code = false;
        let mut watch_always = false;
        let (mut kernel, mut device) = (String::from("unknown"), String::from("unknown"));
        for arg in args {
            let (name, value) = arg.split_once('=').ok_or_else(|| ArgError::NotNameValue(arg.into()))?;
            match name {
                "out" => out = Some(PathBuf::from(value)),
                "accesses" => accesses = Some(PathBuf::from(value)),
                "nic" => {
                    if nics.len() == MAX_NICS {
                        return Err(ArgError::TooManyNics);
                    }
                    let bdf = bdf(value).ok_or_else(|| bad(name, value, "a PCI address BB:DD.F"))?;
                    nics.push(NicArg { bdf, bars: [None; 6] });
                }
                "bar" => {
                    let parts: Vec<&str> = value.split('/').collect();
                    let [f, n, addr] = parts[..] else { return Err(bad(name, value, "BB:DD.F/N/ADDR")) };
                    let f = bdf(f).ok_or_else(|| bad(name, value, "BB:DD.F/N/ADDR"))?;
                    let n = bar_index(name, n)?;
                    let addr = number(addr).ok_or_else(|| bad(name, value, "BB:DD.F/N/ADDR"))?;
                    bars.push((value.to_string(), f, n, addr));
                }
                "size" => {
                    let (n, size) = value.split_once('/').ok_or_else(|| bad(name, value, "N/SIZE"))?;
                    let n = bar_index(name, n)?;
                    sizes[n] = number(size)
                        .filter(|s| s.is_power_of_two())
                        .ok_or_else(|| bad(name, value, "N/SIZE with SIZE a power of two"))?;
                }
                "msix" => {
                    let parts: Vec<&str> = value.split('/').collect();
                    let [b, off, count] = parts[..] else { return Err(bad(name, value, "BAR/OFFSET/COUNT")) };
                    msix = MsixTable {
                        bar: bar_index(name, b)? as u8,
                        offset: number(off).ok_or_else(|| bad(name, value, "BAR/OFFSET/COUNT"))?,
                        entries: number(count)
                            .filter(|c| (1..=2048).contains(c))
                            .ok_or_else(|| bad(name, value, "BAR/OFFSET/COUNT with COUNT 1..2048"))?,
                    };
                }
                "ecam" => {
                    ecam = if value == "off" {
                        None
                    } else {
                        Some(number(value).ok_or_else(|| bad(name, value, "an address or `off`"))?)
                    }
                }
                "code" => {
                    all_code = match value {
                        "kernel" => false,
                        "all" => true,
                        _ => return Err(bad(name, value, "`kernel` or `all`")),
                    }
                }
                "watch" => {
                    watch_always = match value {
                        "bus-master" => false,
                        "always" => true,
                        _ => return Err(bad(name, value, "`bus-master` or `always`")),
                    }
                }
                "kernel" => kernel = value.to_string(),
                "device" => device = value.to_string(),
                _ => return Err(ArgError::Unknown(name.into())),
            }
        }
        let out = out.ok_or(ArgError::Missing("out=PATH"))?;
        if nics.is_empty() {
            return Err(ArgError::Missing("nic=BB:DD.F"));
        }
        for (text, f, n, addr) in bars {
            let nic = nics.iter_mut().find(|nic| nic.bdf == f).ok_or(ArgError::BarWithoutNic(text))?;
            nic.bars[n] = Some(addr);
        }
        let accesses = accesses.unwrap_or_else(|| out.with_extension("accesses"));
        Ok(Config { out, accesses, nics, sizes, msix, ecam, all_code, watch_always, kernel, device })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_parse_with_defaults_and_refuse_what_is_wrong() {
        let c = Config::parse(["out=/tmp/a.transcript", "nic=00:05.0", "nic=0000:00:06.0", "bar=00:06.0/2/0xfd000000"])
            .unwrap();
        assert_eq!(c.accesses, PathBuf::from("/tmp/a.accesses"));
        assert_eq!(c.nics[0].bdf, (0, 5, 0));
        assert_eq!(c.nics[1].bars[2], Some(0xfd00_0000));
        assert_eq!((c.sizes[0], c.sizes[2], c.sizes[4]), (0x1_0000, 0x80_0000, 0x4000));
        assert_eq!(c.ecam, Some(0xb000_0000));
        assert_eq!(Config::parse(["nic=00:05.0"]), Err(ArgError::Missing("out=PATH")));
        assert_eq!(Config::parse(["out=x"]), Err(ArgError::Missing("nic=BB:DD.F")));
        assert!(matches!(Config::parse(["out=x", "nic=00:32.0"]), Err(ArgError::BadValue { .. })));
        assert!(matches!(Config::parse(["out=x", "nic=00:05.0", "size=0/1000"]), Err(ArgError::BadValue { .. })));
        assert_eq!(Config::parse(["out=x", "frob=1"]), Err(ArgError::Unknown("frob".into())));
        assert_eq!(
            Config::parse(["out=x", "nic=00:05.0", "bar=00:07.0/0/0x1000"]),
            Err(ArgError::BarWithoutNic("00:07.0/0/0x1000".into()))
        );
        assert_eq!(Config::parse(["out=x", "nic=00:05.0", "ecam=off"]).unwrap().ecam, None);
        assert!(Config::parse(["out=x", "nic=00:05.0", "code=all"]).unwrap().all_code);
        assert!(!c.all_code && !c.watch_always);
        assert!(Config::parse(["out=x", "nic=00:05.0", "watch=always"]).unwrap().watch_always);
    }
}
