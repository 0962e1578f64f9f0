"""Names and numbers shared by the P4 program and the reference model.

Every value here has a twin in ``p4src/include/constants.p4``;
``tests/test_constants_sync.py`` fails if the two drift apart.
"""

from enum import IntEnum

from .aqms.registry import SELECTORS

# Fixed-point scales (number of fractional bits).
BYTE_TIME_FRAC = 16  # ns per byte, Q16
PROB_FRAC = 32  # probabilities (RED p_b, PIE p), Q32
PIE_COEF_FRAC = 48  # PIE alpha/beta per ns of delay, in Q(32+16): p_q32 step = coef*dq >> 16

RING_SIZE = 1024  # slots of the packet-limit ring (max packet limit is RING_SIZE - 1)
# Slots of the starting-flow tracker (shared by all links: its slots are per flow). 2^16: the slot is the CRC-32's
# low bits, a linear function of the 5-tuple, so two connections between the same two hosts and server port share
# a slot exactly when their client ports differ (XOR) by a value the map sends to 0. With 12 bits 15 such differences
# exist (0x155f, 0x2abe, 0x3fe1, ..., 0x7054) and Linux's ports, handed out in runs, hit them together: one
# keep-alive run had three of its 30 connections collide for the whole session, all three at 0x7054. With 16 bits
# no port difference is sent to 0 (tests/test_iwa.py), as on the Tofino program (IWA_SLOT_BITS).
FLOW_SLOTS = 65536
IW_MIN_SEGMENTS = 3  # the least initial window a standard TCP sends (RFC 3390: 4380 bytes, 3 x 1460 B)
IW_MAX_BYTES = 14600  # the largest initial window a standard TCP sends (RFC 6928: min(10 MSS, max(2 MSS, 14600 B)))
# The most option bytes a TCP header carries (RFC 9293: a data offset of at most 15 words). The MSS bounds a segment's
# payload and options together (RFC 6691), so a sender's full-size segments carry an MSS less their options: 1448 B
# with Linux's timestamps. A full segment holds at least MSS - TCP_OPT_BYTES bytes of payload (shaper.full_segment);
# the parser's option stack (headers.p4) has as many bytes.
TCP_OPT_BYTES = 40
N_LINKS = 16  # access links in one pipeline (a power of two): per-link registers, config keys and counters
IDLE_KEY_SHIFT = 10  # RED idle-decay table key: idle time in units of 1024 ns
CODEL_TIME_SHIFT = 4  # CoDel's times are in units of 2^4 ns (codel.py)

TELEMETRY_ETHERTYPE = 0x88B5  # IEEE 802 local experimental ethertype
TELEMETRY_VERSION = 1
TELEMETRY_SESSION = 100  # clone session id of the monitor port
COUNTER_SLOTS = 64  # class * 4 + decision (per link: link * COUNTER_SLOTS + class * 4 + decision)


# The data plane's AQM selector: one member per AQM with a P4 program of its own (refmodel/aqms/), FIFO = 0, ...
Aqm = IntEnum("Aqm", [(a.name.upper(), a.selector_id) for a in SELECTORS], module=__name__)


class Decision(IntEnum):
    PASS = 0
    DROP = 1
    MARK = 2  # admitted with ECN CE set
    BYPASS = 3  # not towards the bottleneck (upstream) or model unconfigured


class Reason(IntEnum):
    NONE = 0
    LIMIT = 1  # buffer limit (tail drop), any AQM
    RED_EARLY = 2  # RED random (unforced) drop
    RED_FORCED = 3  # RED average above th_max
    CODEL = 4  # CoDel control-law drop
    PIE = 5  # PIE random drop
    IWA_SURPLUS = 6  # starting flow's data beyond the window IWA advertised, while sojourn > target
    IWA_WINDOW = 7  # upstream ACK of a starting flow whose window IWA clamped (start shaping)
    IWA_RTX = 8  # retransmission of a starting flow: protected
    PIE_BURST = 9  # PIE burst allowance active: passed
    UPSTREAM = 10  # reverse direction, not queued
    UNCONFIGURED = 11  # bottleneck not configured yet
    IWA_UNHELD = 12  # a full-size frame of a flow no window holds (QUIC, unshaped TCP), while sojourn > target
    IWA_CAP = 13  # a full-size frame of new data that would queue beyond the budget cap (a link whose rate changes)


class TrafficClass(IntEnum):
    OTHER = 0  # non-IPv4, fragments, malformed
    UDP = 1  # datagrams (the audio)
    TCP_CTRL = 2  # TCP without payload (SYN, FIN, RST, pure ACK)
    TCP_START = 3  # TCP data of a flow in its start phase
    TCP_EST = 4  # TCP data of any other flow
    TCP_RTX = 5  # TCP retransmission of a tracked flow


class Telemetry(IntEnum):
    """Which packets a link reports to the monitor port (its configuration's ``telemetry``): the per-packet clone
    costs a software switch as much as the packet, so a run that would load it can keep the audio's records
    only (``DATAGRAMS``: the single-bottleneck check's input) or none."""

    OFF = 0  # no records
    ALL = 1  # every packet that meets the bottleneck, and (IWA) every ACK of a tracked flow
    DATAGRAMS = 2  # the bottleneck's UDP datagrams only (the audio, RTP), no TCP and no upstream ACK


class TrackFlag(IntEnum):
    """Bits of the flow tracker's verdict (telemetry ``tflags``)."""

    TRACKED = 1  # slot holds this flow
    STARTING = 2  # new data before the flow's start-phase end (upstream: an ACK IWA shaped)
    RTX = 4  # segment ends at or below the highest sequence seen
    NEW_FLOW = 8  # this packet (a SYN-ACK) created the slot
    COLLISION = 16  # SYN-ACK found the slot held by another live flow
    BEYOND = 32  # data beyond the right edge of the window the server was given (it ignored it)
    FIRST_ACK = 64  # the client's first ACK of a tracked flow (handshake done: RTT measured, reserve released)
    SHAPED = 128  # data of a flow IWA holds by its window (SYN seen, not closed)


# Per-flow state of the start shaper (``flow_state``, 32 bits): low 4 bits the client's window scale shift,
# these flags, and in the top 16 bits (FLOW_STAMP_SHIFT) the link's epoch the flow was last counted in.
FLOW_SCALE_MASK = 0x0F
FLOW_SHAPE = 0x10  # the client's SYN was seen, so its window scale is known: the flow may be shaped
FLOW_ANNOUNCED = 0x20  # SYN-ACK seen, no ACK yet: one frame of queue is reserved for its first window
FLOW_ACKED = 0x40  # the client's first ACK passed: the start phase's end is known
FLOW_EPOCH = 0x80  # parity of the reserve's epoch its frame was reserved in
FLOW_COUNTED = 0x100  # counted among the link's active shaped flows in the epoch of its stamp
FLOW_FRESH = 0x200  # ... and it was not active in the epoch before (counted in act_new, not act_old)
FLOW_CLOSED = 0x400  # a FIN or RST from either side: never shaped or counted again
FLOW_IDLE = 0x800  # its server had nothing more to send and all it sent was acknowledged: window retracted
FLOW_PAUSED = 0x1000  # paused (the floor limit) in the epoch of its stamp: not again before the next epoch
FLOW_SHUT = 0x2000  # its window is shut (zero) by IWA: only its server's zero-window probe can reopen it
FLOW_HELD = 0x4000  # ... and one probe's answer already kept it shut (the queue had no room): the next reopens it
FLOW_ASKED = 0x8000  # its server's window joined the virtual queue (a start, a restart) and it has sent nothing since
FLOW_STAMP_SHIFT = 16
EPOCH_MASK = 0xFFFF  # epochs are numbered mod 2^16
# The client's SYN, remembered until the SYN-ACK (``flow_syn``): signature (top 24 bits of the hash) | bits
SYN_SEEN = 0x80
SYN_WS = 0x40  # the SYN carried a window-scale option
WS_MAX = 14  # RFC 7323: a larger shift is used as 14
