/* PIE (RFC 8033 core). The queue delay is the model's backlog drain time (the
 * RFC's timestamp variant); the probability update runs on the first packet at
 * least tupdate after the previous update. refmodel/pie.py has the details.
 * One state per access link: every register is indexed by the packet's link.
 * alpha * (qdelay - target) and beta * (qdelay - qdelay_old) are products by a
 * per-link constant: mantissa.p4's method, with the tables pie_alpha_mul and
 * pie_beta_mul (a link's own rows, link exact at a higher priority, or every
 * other link's, link wildcarded). Each term is its product rounded towards
 * zero by less than 1/64; a delay difference saturates at 2^32 - 1 ns. */
#ifndef _AQM_PIE_P4_
#define _AQM_PIE_P4_

control AqmPie(in prediction_t pred, in pie_cfg_t cfg, in bit<32> mtu_ns, in bit<16> link, in bit<32> rand,
               out verdict_t v) {
    // 32-bit state, as a Tofino register holds it; last_update is a time, 64-bit until the time base is
    register<bit<32>>(N_LINKS) pie_p;            // drop probability, Q32, at most PIE_P_MAX = 1 - 2^-32
    register<bit<32>>(N_LINKS) pie_qdelay_old;   // ns, saturated at 2^32 - 1
    register<bit<32>>(N_LINKS) pie_burst_used;   // burst allowance spent, ns (starts full)
    register<bit<64>>(N_LINKS) pie_last_update;

    Mantissa() dq_mantissa;
    Mantissa() dq_old_mantissa;
    bit<7>  m_dq = 0;
    bit<7>  m_dq_old = 0;
    bit<64> alpha_m = 0;
    bit<64> beta_m = 0;
    action set_alpha_m(bit<48> product) { alpha_m = (bit<64>)product; }
    action set_beta_m(bit<48> product) { beta_m = (bit<64>)product; }
    table pie_alpha_mul {
        key = { link : ternary; m_dq : exact @name("m"); }
        actions = { set_alpha_m; }
        default_action = set_alpha_m(0);
        size = N_LINKS * MANT_ENTRIES;
    }
    table pie_beta_mul {
        key = { link : ternary; m_dq_old : exact @name("m"); }
        actions = { set_beta_m; }
        default_action = set_beta_m(0);
        size = N_LINKS * MANT_ENTRIES;
    }

    apply {
        bit<32> p;
        bit<32> qdelay_old;
        bit<32> burst_used;
        bit<64> last_update;
        bit<32> at = (bit<32>)link;
        pie_p.read(p, at);
        pie_qdelay_old.read(qdelay_old, at);
        pie_burst_used.read(burst_used, at);
        pie_last_update.read(last_update, at);

        bit<32> qdelay = pred.backlog_ns > 0xFFFFFFFF ? 0xFFFFFFFF : (bit<32>)pred.backlog_ns;
        if (pred.now - last_update >= (bit<64>)cfg.tupdate_ns) {
            int<64> dq = (int<64>)(bit<64>)qdelay - (int<64>)(bit<64>)cfg.target_ns;
            int<64> dq_old = (int<64>)(bit<64>)qdelay - (int<64>)(bit<64>)qdelay_old;
            bit<8> e_dq;
            bit<8> e_dq_old;
            dq_mantissa.apply(magnitude32(dq), e_dq, m_dq);
            dq_old_mantissa.apply(magnitude32(dq_old), e_dq_old, m_dq_old);
            pie_alpha_mul.apply();
            pie_beta_mul.apply();
            int<64> a_term = (int<64>)(alpha_m << e_dq);
            int<64> b_term = (int<64>)(beta_m << e_dq_old);
            if (dq < 0) { a_term = -a_term; }
            if (dq_old < 0) { b_term = -b_term; }
            int<64> delta = (a_term + b_term) >> PIE_COEF_TO_PROB;
            // RFC 8033: scale the step down while p is small
            if (p < 4295) {
                delta = delta >> 11;
            } else if (p < 42950) {
                delta = delta >> 9;
            } else if (p < 429497) {
                delta = delta >> 7;
            } else if (p < 4294967) {
                delta = delta >> 5;
            } else if (p < 42949673) {
                delta = delta >> 3;
            } else if (p < PIE_TENTH) {
                delta = delta >> 1;
            }
            if (p >= PIE_TENTH && delta > PIE_TWO_PERCENT) { delta = PIE_TWO_PERCENT; }
            if (qdelay > PIE_DELAY_250MS) { delta = delta + PIE_TWO_PERCENT; }
            int<64> np = (int<64>)(bit<64>)p + delta;
            if (np < 0) { np = 0; }
            if (np > (int<64>)(bit<64>)PIE_P_MAX) { np = (int<64>)(bit<64>)PIE_P_MAX; }
            p = (bit<32>)(bit<64>)np;
            if (qdelay == 0 && qdelay_old == 0) { p = p - (p >> 6); }
            if (burst_used < cfg.max_burst_ns) {
                burst_used = burst_used + cfg.tupdate_ns;   // below 2^32: params.pie_params bounds max_burst
            }
            bit<32> half_target = cfg.target_ns >> 1;
            if (p == 0 && qdelay < half_target && qdelay_old < half_target) {
                burst_used = 0;
            }
            qdelay_old = qdelay;
            last_update = pred.now;
            pie_p.write(at, p);
            pie_qdelay_old.write(at, qdelay_old);
            pie_burst_used.write(at, burst_used);
            pie_last_update.write(at, last_update);
        }

        bit<32> burst = 0;
        if (burst_used < cfg.max_burst_ns) {
            burst = cfg.max_burst_ns - burst_used;
        }
        v.drop = false;
        v.early = false;
        v.reason = REASON_NONE;
        if (pred.over_limit) {
            v.drop = true;
            v.reason = REASON_LIMIT;
        } else if (burst > 0) {
            v.reason = REASON_PIE_BURST;
        } else if ((qdelay_old < (cfg.target_ns >> 1) && p < PIE_FIFTH)
                   || (bit<64>)qdelay < 2 * (bit<64>)mtu_ns) {
            v.reason = REASON_NONE;
        } else if (rand < p) {
            v.drop = true;
            v.early = true;
            v.reason = REASON_PIE;
        }
        v.s1 = (bit<64>)p;
        v.s2 = (bit<64>)burst;
    }
}

#endif
