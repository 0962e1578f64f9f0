/* Names and numbers shared with the reference model (refmodel/constants.py).
 * tests/test_constants_sync.py checks that both sides agree. */
#ifndef _CONSTANTS_P4_
#define _CONSTANTS_P4_

const bit<16> ETHERTYPE_IPV4      = 0x0800;
const bit<16> ETHERTYPE_IPV6      = 0x86DD;
const bit<16> TELEMETRY_ETHERTYPE = 0x88B5;   // IEEE 802 local experimental
const bit<8>  TELEMETRY_VERSION   = 1;
const bit<32> TELEMETRY_SESSION   = 100;      // clone session -> monitor port
const bit<8>  FL_TELEMETRY        = 1;        // field list kept on the clone
const bit<32> TELEMETRY_FRAME_LEN = 78;       // 14 B Ethernet + 64 B record
const bit<64> TCP_FRAME_OVERHEAD = 54;    // Ethernet + IPv4 + TCP headers beside a full segment's payload
const bit<8>  PROTO_TCP = 6;
const bit<8>  PROTO_UDP = 17;

// Fixed-point scales (fractional bits)
#define BYTE_TIME_FRAC 16
#define IDLE_KEY_SHIFT 10
#define CODEL_TIME_SHIFT 4     /* CoDel's times in units of 2^4 ns (aqm_codel.p4) */
#define PIE_COEF_TO_PROB 16    /* Q48 coefficient * ns -> Q32 probability */

const bit<32> RING_SIZE     = 1024;   // packet-limit ring, per link
const bit<32> FLOW_SLOTS    = 4096;   // flow tracker (shared by all links: its slots are per flow)
// Access links in one pipeline (a power of two): per-link state and keys. A program compiled with its own
// N_LINKS (-DN_LINKS=..., as the TNA program's types.p4 allows) keeps that macro instead.
#ifndef N_LINKS
const bit<32> N_LINKS       = 16;
#endif
#define TCP_OPT_BYTES 40               /* the most TCP options a header can carry */
const bit<32> LINK_CLIENTS  = 1024;   // link_of entries: client addresses of all links
const bit<32> LOOKUP_ENTRIES = 512;   // per link: RED's idle-decay and CoDel's control-law range entries
const bit<32> COUNTER_SLOTS = 64;     // class * 4 + decision (per link: link * COUNTER_SLOTS + ...)
// The transmit time len * byte_time as two table lookups per rate class (queue_model.p4, refmodel/arith.py):
// len = 64 * hi + lo; frames up to TX_MAX_FRAME bytes (an IPv4 total length below 2^14, plus Ethernet).
const bit<32> RATE_CLASSES  = 64;
#define TX_LO_BITS 6
#define TX_MAX_FRAME 16397
const bit<32> TX_HI_ENTRIES = 257;     // (TX_MAX_FRAME >> TX_LO_BITS) + 1
// Products by a per-link constant (mantissa.p4, refmodel/arith.py: mul): x's MANT_BITS leading bits.
#define MANT_BITS 7
const bit<32> MANT_ENTRIES  = 128;     // 2^MANT_BITS rows per constant
// Products of two run-time values as sums of logs (logexp.p4, refmodel/arith.py: log2_q, exp2_q): Q12 logs
#define LOG_FRAC 12
#define LOG_MANT_BITS 10
const bit<32> LOG_ENTRIES   = 1024;    // 2^LOG_MANT_BITS
#define EXP_KEY_BITS 10
const bit<32> EXP_ENTRIES   = 1024;    // 2^EXP_KEY_BITS
#define EXP_FRAC 20
const int<32> LOG_ZERO      = -16777216;   // Log2(0): -2^24, below every sum formed with it
const int<32> LOG_ONE_BITS  = 131072;      // log2(2^32) in Q12: probability 1 in Q32

// AQM selector
const bit<8> AQM_FIFO  = 0;
const bit<8> AQM_RED   = 1;
const bit<8> AQM_CODEL = 2;
const bit<8> AQM_PIE   = 3;
const bit<8> AQM_IWA   = 4;

// Decision
const bit<8> DECISION_PASS   = 0;
const bit<8> DECISION_DROP   = 1;
const bit<8> DECISION_MARK   = 2;
const bit<8> DECISION_BYPASS = 3;

// Reason
const bit<8> REASON_NONE          = 0;
const bit<8> REASON_LIMIT         = 1;
const bit<8> REASON_RED_EARLY     = 2;
const bit<8> REASON_RED_FORCED    = 3;
const bit<8> REASON_CODEL         = 4;
const bit<8> REASON_PIE           = 5;
const bit<8> REASON_IWA_SURPLUS   = 6;
const bit<8> REASON_IWA_WINDOW    = 7;
const bit<8> REASON_IWA_RTX       = 8;
const bit<8> REASON_PIE_BURST     = 9;
const bit<8> REASON_UPSTREAM      = 10;
const bit<8> REASON_UNCONFIGURED  = 11;
const bit<8> REASON_IWA_UNHELD    = 12;

// Traffic class
const bit<8> CLASS_OTHER     = 0;
const bit<8> CLASS_UDP       = 1;
const bit<8> CLASS_TCP_CTRL  = 2;
const bit<8> CLASS_TCP_START = 3;
const bit<8> CLASS_TCP_EST   = 4;
const bit<8> CLASS_TCP_RTX   = 5;

// Flow-tracker verdict bits
const bit<8> TRACK_TRACKED   = 1;
const bit<8> TRACK_STARTING  = 2;
const bit<8> TRACK_RTX       = 4;
const bit<8> TRACK_NEW_FLOW  = 8;
const bit<8> TRACK_COLLISION = 16;
const bit<8> TRACK_BEYOND    = 32;
const bit<8> TRACK_FIRST_ACK = 64;
const bit<8> TRACK_SHAPED    = 128;

// Per-flow state of the start shaper (flow_state, 32 bits): low 4 bits are the client's window scale shift,
// then these flags; the top 16 bits (FLOW_STAMP_SHIFT) hold the link's epoch the flow was last counted in.
const bit<32> FLOW_SCALE_MASK = 0x0F;
const bit<32> FLOW_SHAPE      = 0x10;
const bit<32> FLOW_ANNOUNCED  = 0x20;
const bit<32> FLOW_ACKED      = 0x40;
const bit<32> FLOW_EPOCH      = 0x80;
const bit<32> FLOW_COUNTED    = 0x100;
const bit<32> FLOW_FRESH      = 0x200;
const bit<32> FLOW_CLOSED     = 0x400;
const bit<32> FLOW_IDLE       = 0x800;
const bit<32> FLOW_PAUSED     = 0x1000;
#define FLOW_STAMP_SHIFT 16
const bit<32> EPOCH_MASK      = 0xFFFF;
// The client's SYN as remembered until the SYN-ACK (flow_syn): signature (hash & 0xFFFFFF00) | these bits
const bit<32> SYN_SEEN = 0x80;
const bit<32> SYN_WS   = 0x40;
const bit<8>  WS_MAX   = 14;

const bit<8> TCP_FLAG_FIN = 0x01;
const bit<8> TCP_FLAG_SYN = 0x02;
const bit<8> TCP_FLAG_RST = 0x04;
const bit<8> TCP_FLAG_ACK = 0x10;

// PIE constants (RFC 8033), probabilities in Q32 (p is 32-bit: at most 1 - 2^-32)
const bit<32> PIE_P_MAX        = 0xFFFFFFFF;
const int<64> PIE_TWO_PERCENT  = 85899346;
const bit<32> PIE_TENTH        = 429496730;
const bit<32> PIE_FIFTH        = 858993459;
const bit<32> PIE_DELAY_250MS  = 250000000;

#endif
