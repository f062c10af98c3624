//! A thin binding to the handful of QEMU plugin API functions the tracer uses, for API version 7
//! (QEMU 11.1).
//!
//! The `qemu-plugin` crate on crates.io stops at API version 5, which QEMU 11.1 refuses (it
//! accepts exactly version 7). The declarations here follow QEMU's `include/plugins/qemu-plugin.h`
//! (qemu/qemu; version 6 as published, plus what version 7 changed and this module checked
//! against QEMU 11.1.3 itself): callbacks of translation, vCPU initialisation and exit take a
//! user-data pointer instead of the plugin id, and a register descriptor is four words long.
//!
//! The functions are looked up with `dlsym` when QEMU installs the plugin rather than linked, so
//! that the crate's tests link without QEMU and a QEMU lacking one of them is refused with its
//! name instead of failing to load.

use std::ffi::{CStr, CString, c_char, c_int, c_uint, c_void};

/// The API version the plugin declares (`qemu_plugin_version`).
pub const API_VERSION: c_int = 7;

/// `qemu_plugin_id_t`.
pub type PluginId = u64;
/// `qemu_plugin_meminfo_t`.
pub type MemInfo = u32;

/// `struct qemu_plugin_tb` (opaque).
#[repr(C)]
pub struct Tb {
    _opaque: [u8; 0],
}
/// `struct qemu_plugin_insn` (opaque).
#[repr(C)]
pub struct Insn {
    _opaque: [u8; 0],
}
/// `struct qemu_plugin_hwaddr` (opaque).
#[repr(C)]
pub struct Hwaddr {
    _opaque: [u8; 0],
}
/// `struct qemu_plugin_register` (opaque).
#[repr(C)]
pub struct Register {
    _opaque: [u8; 0],
}

/// `qemu_info_t`: what QEMU tells the plugin at install.
#[repr(C)]
pub struct Info {
    /// Target architecture (`x86_64`).
    pub target_name: *const c_char,
    /// Oldest and newest API version QEMU supports.
    pub version_min: c_int,
    /// Newest API version.
    pub version_cur: c_int,
    /// Full-system emulation (not user mode).
    pub system_emulation: bool,
    /// vCPUs at start (system emulation).
    pub smp_vcpus: c_int,
    /// Most vCPUs (system emulation).
    pub max_vcpus: c_int,
}

/// GLib's `GByteArray` header.
#[repr(C)]
pub struct GByteArray {
    /// The bytes.
    pub data: *mut u8,
    /// How many.
    pub len: c_uint,
}

/// GLib's `GArray` header.
#[repr(C)]
struct GArray {
    data: *mut c_char,
    len: c_uint,
}

/// `qemu_plugin_reg_descriptor` as QEMU 11.1 lays it out (four words: handle, name, feature and
/// one more that the tracer does not read).
#[repr(C)]
struct RegDescriptor {
    handle: *mut Register,
    name: *const c_char,
    feature: *const c_char,
    _more: usize,
}

/// `qemu_plugin_mem_value`: a loaded or stored value.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct MemValue {
    /// `enum qemu_plugin_mem_value_type`: 0 u8, 1 u16, 2 u32, 3 u64, 4 u128.
    pub ty: c_uint,
    /// The value's low 64 bits (the union's widest integer member comes first).
    pub low: u64,
    /// The high 64 bits of a 128-bit value.
    pub high: u64,
}

/// `QEMU_PLUGIN_CB_NO_REGS`.
pub const CB_NO_REGS: c_uint = 0;
/// `QEMU_PLUGIN_CB_R_REGS`.
pub const CB_R_REGS: c_uint = 1;
/// `QEMU_PLUGIN_MEM_RW`.
pub const MEM_RW: c_uint = 3;

/// A translation callback.
pub type TbTransCb = unsafe extern "C" fn(tb: *mut Tb, userdata: *mut c_void);
/// A vCPU callback (initialisation, instruction execution).
pub type VcpuUdataCb = unsafe extern "C" fn(vcpu: c_uint, userdata: *mut c_void);
/// A memory-access callback.
pub type MemCb = unsafe extern "C" fn(vcpu: c_uint, info: MemInfo, vaddr: u64, userdata: *mut c_void);
/// The exit callback, and the callback of a reset.
pub type AtexitCb = unsafe extern "C" fn(userdata: *mut c_void);

/// A function the running QEMU does not provide.
#[derive(Debug, thiserror::Error)]
#[error("QEMU provides no `{0}` (the plugin needs QEMU 11.1's plugin API, version 7)")]
pub struct MissingFunction(pub &'static str);

fn lookup(name: &'static str) -> Result<*mut c_void, MissingFunction> {
    let c = CString::new(name).expect("symbol names have no NUL");
    // SAFETY: `dlsym` with RTLD_DEFAULT searches the objects already loaded into the process
    // (QEMU and its libraries) for a NUL-terminated name; it reads nothing else.
    let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c.as_ptr()) };
    if p.is_null() { Err(MissingFunction(name)) } else { Ok(p) }
}

/// The table of functions: each field, the symbol it is looked up by, and its C signature.
macro_rules! functions {
    ($($field:ident = $name:literal: fn($($arg:ty),*) $(-> $ret:ty)?;)*) => {
        /// The functions, as looked up in the QEMU process.
        pub struct Api {
            $($field: unsafe extern "C" fn($($arg),*) $(-> $ret)?,)*
        }

        impl Api {
            /// Look every function up in the running process.
            pub(crate) fn load() -> Result<Api, MissingFunction> {
                Ok(Api {
                    $($field: {
                        let p = lookup($name)?;
                        // SAFETY: the symbol is QEMU's (or GLib's) function of that name, whose C
                        // signature is the field's (include/plugins/qemu-plugin.h, glib/garray.h);
                        // function and data pointers have one size where QEMU runs.
                        unsafe {
                            std::mem::transmute::<*mut c_void, unsafe extern "C" fn($($arg),*) $(-> $ret)?>(p)
                        }
                    },)*
                })
            }
        }
    };
}

functions! {
    register_tb_trans = "qemu_plugin_register_vcpu_tb_trans_cb": fn(PluginId, TbTransCb, *mut c_void);
    register_vcpu_init = "qemu_plugin_register_vcpu_init_cb": fn(PluginId, VcpuUdataCb, *mut c_void);
    register_atexit = "qemu_plugin_register_atexit_cb": fn(PluginId, AtexitCb, *mut c_void);
    reset = "qemu_plugin_reset": fn(PluginId, AtexitCb, *mut c_void);
    tb_n_insns = "qemu_plugin_tb_n_insns": fn(*const Tb) -> usize;
    tb_get_insn = "qemu_plugin_tb_get_insn": fn(*const Tb, usize) -> *mut Insn;
    insn_data = "qemu_plugin_insn_data": fn(*const Insn, *mut c_void, usize) -> usize;
    insn_vaddr = "qemu_plugin_insn_vaddr": fn(*const Insn) -> u64;
    register_insn_exec = "qemu_plugin_register_vcpu_insn_exec_cb": fn(*mut Insn, VcpuUdataCb, c_uint, *mut c_void);
    register_mem = "qemu_plugin_register_vcpu_mem_cb": fn(*mut Insn, MemCb, c_uint, c_uint, *mut c_void);
    mem_size_shift = "qemu_plugin_mem_size_shift": fn(MemInfo) -> c_uint;
    mem_is_store = "qemu_plugin_mem_is_store": fn(MemInfo) -> bool;
    mem_get_value = "qemu_plugin_mem_get_value": fn(MemInfo) -> MemValue;
    get_hwaddr = "qemu_plugin_get_hwaddr": fn(MemInfo, u64) -> *mut Hwaddr;
    hwaddr_phys_addr = "qemu_plugin_hwaddr_phys_addr": fn(*const Hwaddr) -> u64;
    get_registers = "qemu_plugin_get_registers": fn() -> *mut GArray;
    read_register = "qemu_plugin_read_register": fn(*mut Register, *mut GByteArray) -> bool;
    read_memory_hwaddr = "qemu_plugin_read_memory_hwaddr": fn(u64, *mut GByteArray, usize) -> c_int;
    outs = "qemu_plugin_outs": fn(*const c_char);
    g_byte_array_new = "g_byte_array_new": fn() -> *mut GByteArray;
    g_byte_array_set_size = "g_byte_array_set_size": fn(*mut GByteArray, c_uint) -> *mut GByteArray;
    g_array_free = "g_array_free": fn(*mut GArray, c_int) -> *mut c_char;
}

impl Api {
    /// Have `cb` called with `userdata` for every translated block.
    pub(crate) fn register_tb_trans(&self, id: PluginId, cb: TbTransCb, userdata: *mut c_void) {
        // SAFETY: called from `qemu_plugin_install` with the id QEMU gave; `cb` has the C
        // signature QEMU calls.
        unsafe { (self.register_tb_trans)(id, cb, userdata) }
    }

    /// Have `cb` called when each vCPU starts.
    pub(crate) fn register_vcpu_init(&self, id: PluginId, cb: VcpuUdataCb, userdata: *mut c_void) {
        // SAFETY: as for `register_tb_trans`.
        unsafe { (self.register_vcpu_init)(id, cb, userdata) }
    }

    /// Have `cb` called when QEMU exits.
    pub(crate) fn register_atexit(&self, id: PluginId, cb: AtexitCb, userdata: *mut c_void) {
        // SAFETY: as for `register_tb_trans`.
        unsafe { (self.register_atexit)(id, cb, userdata) }
    }

    /// Drop every callback the plugin registered and the code translated with them; `cb` runs
    /// once that is done (the plugin then registers what it wants anew). Its argument is not to
    /// be read.
    pub(crate) fn reset(&self, id: PluginId, cb: AtexitCb) {
        // SAFETY: as for `register_tb_trans`; QEMU allows a reset from a vCPU callback and runs
        // `cb` when it has happened.
        unsafe { (self.reset)(id, cb, std::ptr::null_mut()) }
    }

    /// The instructions of block `tb` (valid during the translation callback only).
    pub(crate) fn insns(&self, tb: *mut Tb) -> impl Iterator<Item = *mut Insn> + '_ {
        // SAFETY: `tb` is the handle QEMU passed to the translation callback that calls this.
        let n = unsafe { (self.tb_n_insns)(tb) };
        // SAFETY: every index below the block's instruction count names one of its instructions.
        (0..n).map(move |i| unsafe { (self.tb_get_insn)(tb, i) })
    }

    /// Up to 16 bytes of the instruction's encoding.
    pub(crate) fn insn_bytes(&self, insn: *mut Insn) -> ([u8; 16], usize) {
        let mut buf = [0u8; 16];
        // SAFETY: QEMU copies at most `len` bytes of the instruction into `buf`.
        let n = unsafe { (self.insn_data)(insn, buf.as_mut_ptr().cast(), buf.len()) };
        (buf, n.min(buf.len()))
    }

    /// The guest-virtual address of the instruction.
    pub(crate) fn insn_vaddr(&self, insn: *mut Insn) -> u64 {
        // SAFETY: `insn` is a handle of the block being translated.
        unsafe { (self.insn_vaddr)(insn) }
    }

    /// Call `cb` before `insn` runs; with `read_regs`, the callback may read registers.
    pub(crate) fn register_insn_exec(&self, insn: *mut Insn, cb: VcpuUdataCb, read_regs: bool, userdata: *mut c_void) {
        let flags = if read_regs { CB_R_REGS } else { CB_NO_REGS };
        // SAFETY: `insn` is a handle of the block being translated.
        unsafe { (self.register_insn_exec)(insn, cb, flags, userdata) }
    }

    /// Call `cb` after every load and store `insn` makes.
    pub(crate) fn register_mem(&self, insn: *mut Insn, cb: MemCb, userdata: *mut c_void) {
        // SAFETY: as for `register_insn_exec`.
        unsafe { (self.register_mem)(insn, cb, CB_NO_REGS, MEM_RW, userdata) }
    }

    /// The guest-physical address of a memory callback's access.
    pub(crate) fn phys(&self, info: MemInfo, vaddr: u64) -> Option<u64> {
        // SAFETY: `info` and `vaddr` are the ones QEMU passed to the running memory callback,
        // which is where these queries are valid.
        unsafe {
            let h = (self.get_hwaddr)(info, vaddr);
            if h.is_null() { None } else { Some((self.hwaddr_phys_addr)(h)) }
        }
    }

    /// A memory callback's access: size in bytes, store (else load), and the value (its low 64
    /// bits, masked to the size).
    pub(crate) fn access(&self, info: MemInfo) -> (u8, bool, u64) {
        // SAFETY: as for `phys`.
        unsafe {
            let size = 1u8 << ((self.mem_size_shift)(info) & 3);
            let store = (self.mem_is_store)(info);
            let v = (self.mem_get_value)(info);
            let value = if size >= 8 { v.low } else { v.low & ((1u64 << (8 * u32::from(size))) - 1) };
            (size, store, value)
        }
    }

    /// A message on QEMU's log.
    pub(crate) fn outs(&self, text: &str) {
        let c = CString::new(text.replace('\0', " ")).expect("NULs were replaced");
        // SAFETY: a NUL-terminated string QEMU only reads.
        unsafe { (self.outs)(c.as_ptr()) }
    }

    /// A scratch buffer for register and memory reads.
    pub(crate) fn byte_array(&self) -> ByteArray {
        // SAFETY: allocates an empty GByteArray; it is never freed (one per vCPU thread).
        ByteArray(unsafe { (self.g_byte_array_new)() })
    }

    /// Handles of the named registers of the calling vCPU (call from a vCPU callback), in the
    /// order of `names`; `Err` names what is missing or laid out otherwise than expected.
    pub(crate) fn registers(&self, names: &[&str]) -> Result<Vec<RegisterHandle>, String> {
        // SAFETY: called on a vCPU thread from its init callback, where QEMU lets a plugin list
        // the vCPU's registers; the array it returns is the plugin's to free.
        let array = unsafe { (self.get_registers)() };
        if array.is_null() {
            return Err("QEMU listed no registers".into());
        }
        // SAFETY: a GArray of `len` descriptors laid out as `RegDescriptor` (checked below by
        // the names of the first two: on x86 they are rax and rbx whatever the layout, since
        // each word read lies within the array's first two descriptors of either size).
        let descriptors: Vec<(String, *mut Register)> = unsafe {
            let len = (*array).len as usize;
            let d = (*array).data.cast::<RegDescriptor>();
            (0..len)
                .map(|i| {
                    let r = &*d.add(i);
                    let name =
                        if r.name.is_null() { String::new() } else { CStr::from_ptr(r.name).to_string_lossy().into() };
                    (name, r.handle)
                })
                .take_while(|(name, _)| !name.is_empty())
                .collect()
        };
        // SAFETY: the array was QEMU's to give; its elements are copied out above.
        unsafe { (self.g_array_free)(array, 1) };
        if descriptors.len() < 2 || descriptors[0].0 != "rax" || descriptors[1].0 != "rbx" {
            return Err(format!(
                "register descriptors are not laid out as QEMU 11.1 lays them out (first names: {:?})",
                descriptors.iter().take(2).map(|d| &d.0).collect::<Vec<_>>()
            ));
        }
        names
            .iter()
            .map(|want| {
                descriptors
                    .iter()
                    .find(|(n, _)| n == want)
                    .map(|(_, h)| RegisterHandle(*h))
                    .ok_or_else(|| format!("no register named {want}"))
            })
            .collect()
    }

    /// The value of a register of the calling vCPU (from a callback registered to read
    /// registers), its first 8 bytes little-endian.
    pub(crate) fn read_register(&self, reg: RegisterHandle, buf: &mut ByteArray) -> Option<u64> {
        // SAFETY: `buf` is a live GByteArray of this thread; QEMU appends the register's bytes.
        unsafe {
            (self.g_byte_array_set_size)(buf.0, 0);
            if !(self.read_register)(reg.0, buf.0) {
                return None;
            }
            Some(le_bytes((*buf.0).data, (*buf.0).len as usize))
        }
    }

    /// Up to 64 bytes of guest physical memory at `addr` (from a vCPU callback).
    pub(crate) fn read_physical(&self, addr: u64, len: usize, buf: &mut ByteArray) -> Option<Vec<u8>> {
        // SAFETY: as for `read_register`; QEMU fills `buf` with `len` bytes on success (0).
        unsafe {
            (self.g_byte_array_set_size)(buf.0, 0);
            if (self.read_memory_hwaddr)(addr, buf.0, len) != 0 {
                return None;
            }
            let n = ((*buf.0).len as usize).min(len);
            Some(std::slice::from_raw_parts((*buf.0).data, n).to_vec())
        }
    }
}

/// Up to 8 bytes at `p` as a little-endian number.
///
/// # Safety
/// `p` must point at `len` readable bytes.
unsafe fn le_bytes(p: *const u8, len: usize) -> u64 {
    let mut v = [0u8; 8];
    let n = len.min(8);
    // SAFETY: the caller vouches for `len` bytes at `p`.
    unsafe { std::ptr::copy_nonoverlapping(p, v.as_mut_ptr(), n) };
    u64::from_le_bytes(v)
}

/// A register of a vCPU.
#[derive(Clone, Copy)]
pub struct RegisterHandle(*mut Register);
// SAFETY: the handle is an opaque token QEMU hands out and takes back; it is valid for any vCPU
// of the same kind and is never dereferenced here.
unsafe impl Send for RegisterHandle {}
// SAFETY: as above.
unsafe impl Sync for RegisterHandle {}

/// A GLib byte array used as scratch space by one thread.
pub struct ByteArray(*mut GByteArray);
// SAFETY: the array is only ever used by the thread that owns this value.
unsafe impl Send for ByteArray {}
