//! QUEUE_QPORTCFG: the port's CoS queues (bnxt.c `bnxt_hwrm_queue_qportcfg`: it needs
//! `max_configurable_queues` > 0 and reads (queue_id, service_profile) pairs; without
//! QUEUE_CFG_INFO_ASYM_CFG the RX path is taken to mirror the TX path).

use bnxt_hsi::hwrm::layouts::{HwrmQueueQportcfgInput, HwrmQueueQportcfgOutput};

use super::caps::QUEUES;
use super::identity::PORT_ID;
use super::response::{Outcome, Reject, parse, reply};

/// Answer QUEUE_QPORTCFG for the TX or RX path (they are the same: symmetric queues).
pub fn queue_qportcfg(bytes: &[u8]) -> Outcome {
    let req: HwrmQueueQportcfgInput = parse(bytes);
    let flags = req.flags.get();
    if flags & !HwrmQueueQportcfgInput::FLAGS_PATH_RX != 0 {
        return Err(Reject::invalid(format!("flags 0x{flags:x} has bits beyond PATH")));
    }
    let port = req.port_id.get();
    if port != PORT_ID {
        return Err(Reject::invalid(format!("port_id {port} does not exist (the function has port {PORT_ID})")));
    }
    reply::<HwrmQueueQportcfgOutput>(|o| {
        o.max_configurable_queues = QUEUES.len() as u8;
        o.max_configurable_lossless_queues = 0;
        let ids = [
            (&mut o.queue_id0, &mut o.queue_id0_service_profile),
            (&mut o.queue_id1, &mut o.queue_id1_service_profile),
            (&mut o.queue_id2, &mut o.queue_id2_service_profile),
            (&mut o.queue_id3, &mut o.queue_id3_service_profile),
            (&mut o.queue_id4, &mut o.queue_id4_service_profile),
            (&mut o.queue_id5, &mut o.queue_id5_service_profile),
            (&mut o.queue_id6, &mut o.queue_id6_service_profile),
            (&mut o.queue_id7, &mut o.queue_id7_service_profile),
        ];
        for (slot, (id, profile)) in ids.into_iter().enumerate() {
            match QUEUES.get(slot) {
                Some(&(qid, prof)) => (*id, *profile) = (qid, prof),
                None => (*id, *profile) = (0xff, HwrmQueueQportcfgOutput::QUEUE_ID0_SERVICE_PROFILE_UNKNOWN),
            }
        }
    })
}
