//! The function's interrupt types as vfio-pci describes them (`<linux/vfio.h>`
//! `VFIO_PCI_*_IRQ_INDEX`), and the eventfds a client hands over with
//! `VFIO_USER_DEVICE_SET_IRQS` to be signalled when the device raises an interrupt.
//!
//! The model's function has INTx (config space says pin INTA; the model never asserts it) and
//! MSI-X with [`MSIX_VECTORS`] vectors; no MSI capability, so MSI has no interrupts; no error or
//! request notification. MSI-X masking is the client's business: QEMU emulates the MSI-X table of
//! a vfio-user device and only forwards PBA reads (hw/vfio-user/pci.c), so the server signals a
//! vector's eventfd whenever the device raises it.
//!
//! A trigger must never block the server's one thread: each descriptor is checked when it is
//! set to be an eventfd open for writing (anything else, a pipe, a directory, a file, a socket,
//! is refused with the reason), and is made non-blocking (`O_NONBLOCK` is a flag of the open
//! file description, so the client's copy becomes non-blocking too, as QEMU's own eventfds
//! already are). A write that cannot be done now (the counter at its largest value, 2^64 - 2:
//! the interrupt is pending already) drops the interrupt and counts it. Before each write the
//! flag is looked at again and set anew if the client cleared it since.

use std::os::fd::{AsFd, AsRawFd, OwnedFd};

use rustix::fs::OFlags;

use bnxt_vfio_user::linux::{
    IRQ_INFO_AUTOMASKED, IRQ_INFO_EVENTFD, IRQ_INFO_MASKABLE, IRQ_INFO_NORESIZE, IRQ_SET_ACTION_MASK,
    IRQ_SET_ACTION_TRIGGER, IRQ_SET_ACTION_TYPE_MASK, IRQ_SET_ACTION_UNMASK, IRQ_SET_DATA_BOOL, IRQ_SET_DATA_EVENTFD,
    IRQ_SET_DATA_NONE, IRQ_SET_DATA_TYPE_MASK, PCI_ERR_IRQ_INDEX, PCI_INTX_IRQ_INDEX, PCI_MSIX_IRQ_INDEX, PCI_NUM_IRQS,
    PCI_REQ_IRQ_INDEX, errno,
};
use bnxt_vfio_user::payload::IrqInfo;

use super::{Refusal, refuse};
use bnxt_model::config_space::MSIX_VECTORS;

/// Number of interrupts and flags of interrupt type `index`, as Linux vfio-pci reports them for
/// a PCIe function with INTx and MSI-X and no MSI (drivers/vfio/pci/vfio_pci_core.c
/// `vfio_pci_get_irq_count`: ERR and REQ have one interrupt each). The model never raises ERR
/// or REQ; QEMU registers eventfds for them and warns when they are missing.
fn shape(index: u32) -> (u32, u32) {
    match index {
        PCI_INTX_IRQ_INDEX => (1, IRQ_INFO_EVENTFD | IRQ_INFO_MASKABLE | IRQ_INFO_AUTOMASKED),
        PCI_MSIX_IRQ_INDEX => (u32::from(MSIX_VECTORS), IRQ_INFO_EVENTFD | IRQ_INFO_NORESIZE),
        PCI_ERR_IRQ_INDEX | PCI_REQ_IRQ_INDEX => (1, IRQ_INFO_EVENTFD),
        _ => (0, IRQ_INFO_EVENTFD),
    }
}

/// The `VFIO_USER_DEVICE_GET_IRQ_INFO` reply for `index`, or `None` past the last type.
pub fn info(index: u32) -> Option<IrqInfo> {
    (index < PCI_NUM_IRQS).then(|| {
        let (count, flags) = shape(index);
        IrqInfo { argsz: size_of::<IrqInfo>() as u32, flags, index, count }
    })
}

/// Check that `fd` can be an interrupt trigger (an eventfd open for writing) and make it
/// non-blocking; the reason when it cannot.
fn take_trigger(fd: &OwnedFd) -> Result<(), String> {
    let flags = rustix::fs::fcntl_getfl(fd).map_err(|e| format!("its flags cannot be read ({e})"))?;
    let kind = descriptor_kind(fd);
    if kind != "eventfd" {
        return Err(format!("it is {kind}, not an eventfd"));
    }
    if flags & OFlags::ACCMODE == OFlags::RDONLY {
        return Err("it is open for reading only".into());
    }
    keep_non_blocking(fd, flags)
}

/// What `fd` is, as a phrase for a refusal: `eventfd` for an eventfd.
fn descriptor_kind(fd: &OwnedFd) -> String {
    // Linux shows an eventfd's counter in its fdinfo (fs/eventfd.c `eventfd_show_fdinfo`), and
    // nothing else's.
    let fdinfo = std::fs::read_to_string(format!("/proc/self/fdinfo/{}", fd.as_raw_fd())).unwrap_or_default();
    if fdinfo.lines().any(|l| l.starts_with("eventfd-count:")) {
        return "eventfd".into();
    }
    let Ok(stat) = rustix::fs::fstat(fd) else { return "a descriptor that cannot be looked at".into() };
    match rustix::fs::FileType::from_raw_mode(stat.st_mode) {
        rustix::fs::FileType::Directory => "a directory".into(),
        rustix::fs::FileType::RegularFile => "a file".into(),
        rustix::fs::FileType::Fifo => "a pipe".into(),
        rustix::fs::FileType::Socket => "a socket".into(),
        rustix::fs::FileType::CharacterDevice | rustix::fs::FileType::BlockDevice => "a device".into(),
        _ => std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd()))
            .map(|l| format!("`{}`", l.display()))
            .unwrap_or_else(|_| "not an eventfd".into()),
    }
}

/// Set `O_NONBLOCK` on `fd` (whose flags are `flags`) unless it is set already.
fn keep_non_blocking(fd: &OwnedFd, flags: OFlags) -> Result<(), String> {
    if flags.contains(OFlags::NONBLOCK) {
        return Ok(());
    }
    rustix::fs::fcntl_setfl(fd, (flags & !OFlags::ACCMODE) | OFlags::NONBLOCK)
        .map_err(|e| format!("it cannot be made non-blocking ({e})"))
}

/// One interrupt: its trigger eventfd and mask state.
#[derive(Debug, Default)]
struct Line {
    trigger: Option<OwnedFd>,
    masked: bool,
}

/// The eventfds and masks of every interrupt of the function.
#[derive(Debug)]
pub struct IrqTable {
    lines: Vec<Vec<Line>>,
    signalled: u64,
    dropped: u64,
}

impl Default for IrqTable {
    fn default() -> IrqTable {
        IrqTable::new()
    }
}

impl IrqTable {
    /// No eventfds, nothing masked.
    pub fn new() -> IrqTable {
        let lines = (0..PCI_NUM_IRQS).map(|i| (0..shape(i).0).map(|_| Line::default()).collect()).collect();
        IrqTable { lines, signalled: 0, dropped: 0 }
    }

    /// Drop every eventfd (client gone, or device reset keeps none).
    pub fn clear(&mut self) {
        *self = IrqTable::new();
    }

    /// Eventfds currently held, over all types.
    pub fn eventfds(&self) -> usize {
        self.lines.iter().flatten().filter(|l| l.trigger.is_some()).count()
    }

    /// Interrupts signalled to an eventfd so far.
    pub fn signalled(&self) -> u64 {
        self.signalled
    }

    /// Interrupts raised with no eventfd to signal (or masked), dropped.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Apply a `SET_IRQS` request: `flags`, interrupt type `index`, the range `start..start+count`,
    /// the booleans that followed the request, and the descriptors that came with it.
    pub fn set(
        &mut self,
        flags: u32,
        index: u32,
        start: u32,
        count: u32,
        data: &[u8],
        fds: Vec<OwnedFd>,
    ) -> Result<(), Refusal> {
        let data_kind = flags & IRQ_SET_DATA_TYPE_MASK;
        let action = flags & IRQ_SET_ACTION_TYPE_MASK;
        if data_kind.count_ones() != 1
            || action.count_ones() != 1
            || flags & !(IRQ_SET_DATA_TYPE_MASK | IRQ_SET_ACTION_TYPE_MASK) != 0
        {
            return Err(refuse(
                errno::EINVAL,
                format!("SET_IRQS flags 0x{flags:x} must name exactly one data kind and one action"),
            ));
        }
        let lines = self.lines.get_mut(index as usize).ok_or_else(|| {
            refuse(errno::EINVAL, format!("SET_IRQS for interrupt type {index}; the device has {PCI_NUM_IRQS}"))
        })?;
        // count 0 with DATA_NONE and TRIGGER disables every interrupt of the type.
        if count == 0 {
            if data_kind == IRQ_SET_DATA_NONE && action == IRQ_SET_ACTION_TRIGGER {
                lines.iter_mut().for_each(|l| *l = Line::default());
                return Ok(());
            }
            return Err(refuse(errno::EINVAL, "SET_IRQS with count 0 is only meaningful as DATA_NONE|ACTION_TRIGGER"));
        }
        let end = start.checked_add(count).filter(|&e| e as usize <= lines.len()).ok_or_else(|| {
            refuse(
                errno::EINVAL,
                format!("SET_IRQS range {start}+{count} is beyond the {} interrupts of type {index}", lines.len()),
            )
        })?;
        let range = &mut lines[start as usize..end as usize];
        match data_kind {
            IRQ_SET_DATA_EVENTFD => {
                if action != IRQ_SET_ACTION_TRIGGER {
                    return Err(refuse(
                        errno::ENOTSUP,
                        "mask/unmask eventfds are not supported (only trigger eventfds)",
                    ));
                }
                if fds.is_empty() {
                    range.iter_mut().for_each(|l| l.trigger = None);
                    return Ok(());
                }
                if fds.len() != range.len() {
                    return Err(refuse(
                        errno::EINVAL,
                        format!("SET_IRQS names {count} interrupts but came with {} eventfds", fds.len()),
                    ));
                }
                for (i, fd) in fds.iter().enumerate() {
                    take_trigger(fd).map_err(|why| {
                        refuse(
                            errno::EINVAL,
                            format!(
                                "SET_IRQS trigger for interrupt {} of type {index} is refused: {why}",
                                start as usize + i
                            ),
                        )
                    })?;
                }
                for (line, fd) in range.iter_mut().zip(fds) {
                    line.trigger = Some(fd);
                }
                Ok(())
            }
            IRQ_SET_DATA_NONE | IRQ_SET_DATA_BOOL => {
                let chosen: Vec<bool> = if data_kind == IRQ_SET_DATA_BOOL {
                    if data.len() < range.len() {
                        return Err(refuse(
                            errno::EINVAL,
                            format!("SET_IRQS DATA_BOOL needs {count} booleans, got {}", data.len()),
                        ));
                    }
                    data[..range.len()].iter().map(|&b| b != 0).collect()
                } else {
                    vec![true; range.len()]
                };
                let mut fire = Vec::new();
                for (i, (line, on)) in range.iter_mut().zip(chosen).enumerate() {
                    if !on {
                        continue;
                    }
                    match action {
                        IRQ_SET_ACTION_MASK => line.masked = true,
                        IRQ_SET_ACTION_UNMASK => line.masked = false,
                        _ => fire.push(start + i as u32),
                    }
                }
                for n in fire {
                    self.signal(index, n);
                }
                Ok(())
            }
            _ => unreachable!("data kind checked to be one of three bits"),
        }
    }

    /// The device raised interrupt `n` of type `index`: signal its eventfd unless it has none or
    /// is masked. Returns whether an eventfd was signalled.
    pub fn signal(&mut self, index: u32, n: u32) -> bool {
        let Some(line) = self.lines.get_mut(index as usize).and_then(|l| l.get_mut(n as usize)) else {
            self.dropped += 1;
            return false;
        };
        if index == PCI_INTX_IRQ_INDEX && line.masked {
            self.dropped += 1;
            return false;
        }
        let Some(fd) = &line.trigger else {
            self.dropped += 1;
            return false;
        };
        // The client may have cleared O_NONBLOCK since the trigger was set: set it again first.
        let flags = rustix::fs::fcntl_getfl(fd).map_err(|e| e.to_string());
        if let Err(why) = flags.and_then(|f| keep_non_blocking(fd, f)) {
            tracing::warn!(index, n, "an interrupt eventfd cannot be kept non-blocking ({why}); it is dropped");
            line.trigger = None;
            self.dropped += 1;
            return false;
        }
        // An eventfd adds the 8-byte value written to its counter (eventfd(2)); one at its
        // largest value refuses with EAGAIN (non-blocking), and the interrupt is pending anyway.
        match rustix::io::write(fd.as_fd(), &1u64.to_ne_bytes()) {
            Ok(_) => {
                if index == PCI_INTX_IRQ_INDEX {
                    line.masked = true; // INTx is automasked (VFIO_IRQ_INFO_AUTOMASKED)
                }
                self.signalled += 1;
                true
            }
            Err(e) => {
                tracing::warn!(index, n, error = %e, "cannot signal an interrupt eventfd");
                self.dropped += 1;
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustix::event::{EventfdFlags, eventfd};

    fn counter(fd: &OwnedFd) -> u64 {
        let mut b = [0u8; 8];
        rustix::io::read(fd, &mut b).unwrap();
        u64::from_ne_bytes(b)
    }

    #[test]
    fn info_describes_intx_msix_err_and_req_but_no_msi() {
        assert_eq!(info(0).unwrap().count, 1);
        assert_eq!(info(1).unwrap().count, 0);
        assert_eq!(info(2).unwrap().count, 128);
        assert_eq!((info(3).unwrap().count, info(4).unwrap().count), (1, 1));
        assert_eq!(info(2).unwrap().flags, IRQ_INFO_EVENTFD | IRQ_INFO_NORESIZE);
        assert!(info(5).is_none());
    }

    #[test]
    fn msix_eventfds_are_signalled_and_deassigned() {
        let mut t = IrqTable::new();
        let a = eventfd(0, EventfdFlags::NONBLOCK).unwrap();
        let b = eventfd(0, EventfdFlags::NONBLOCK).unwrap();
        let (a2, b2) = (a.try_clone().unwrap(), b.try_clone().unwrap());
        t.set(IRQ_SET_DATA_EVENTFD | IRQ_SET_ACTION_TRIGGER, 2, 3, 2, &[], vec![a2, b2]).unwrap();
        assert_eq!(t.eventfds(), 2);
        assert!(t.signal(2, 4));
        assert!(t.signal(2, 4));
        assert!(!t.signal(2, 5));
        assert_eq!(counter(&b), 2);
        t.set(IRQ_SET_DATA_NONE | IRQ_SET_ACTION_TRIGGER, 2, 3, 1, &[], vec![]).unwrap();
        assert_eq!(counter(&a), 1, "a client-side trigger signals the eventfd");
        t.set(IRQ_SET_DATA_EVENTFD | IRQ_SET_ACTION_TRIGGER, 2, 3, 1, &[], vec![]).unwrap();
        assert_eq!(t.eventfds(), 1);
        t.set(IRQ_SET_DATA_NONE | IRQ_SET_ACTION_TRIGGER, 2, 0, 0, &[], vec![]).unwrap();
        assert_eq!(t.eventfds(), 0);
        assert_eq!((t.signalled(), t.dropped()), (3, 1));
    }

    #[test]
    fn bad_requests_are_refused_with_reasons() {
        let mut t = IrqTable::new();
        let cases = [
            (IRQ_SET_DATA_NONE | IRQ_SET_DATA_BOOL | IRQ_SET_ACTION_TRIGGER, 2, 0, 1, "exactly one"),
            (IRQ_SET_DATA_NONE | IRQ_SET_ACTION_TRIGGER, 9, 0, 1, "interrupt type 9"),
            (IRQ_SET_DATA_NONE | IRQ_SET_ACTION_TRIGGER, 2, 127, 2, "beyond the 128"),
            (IRQ_SET_DATA_NONE | IRQ_SET_ACTION_TRIGGER, 2, u32::MAX, 2, "beyond"),
            (IRQ_SET_DATA_BOOL | IRQ_SET_ACTION_MASK, 2, 0, 4, "booleans"),
            (IRQ_SET_DATA_EVENTFD | IRQ_SET_ACTION_UNMASK, 0, 0, 1, "not supported"),
        ];
        for (flags, index, start, count, want) in cases {
            let err = t.set(flags, index, start, count, &[1], vec![]).unwrap_err();
            assert!(err.reason.contains(want), "{err}");
        }
        let fd = eventfd(0, EventfdFlags::NONBLOCK).unwrap();
        let err = t.set(IRQ_SET_DATA_EVENTFD | IRQ_SET_ACTION_TRIGGER, 2, 0, 2, &[], vec![fd]).unwrap_err();
        assert!(err.reason.contains("came with 1 eventfds"), "{err}");
    }

    #[test]
    fn intx_is_automasked_until_unmasked() {
        let mut t = IrqTable::new();
        let fd = eventfd(0, EventfdFlags::NONBLOCK).unwrap();
        t.set(IRQ_SET_DATA_EVENTFD | IRQ_SET_ACTION_TRIGGER, 0, 0, 1, &[], vec![fd.try_clone().unwrap()]).unwrap();
        assert!(t.signal(0, 0));
        assert!(!t.signal(0, 0));
        t.set(IRQ_SET_DATA_NONE | IRQ_SET_ACTION_UNMASK, 0, 0, 1, &[], vec![]).unwrap();
        assert!(t.signal(0, 0));
        assert_eq!(counter(&fd), 2);
    }
}
