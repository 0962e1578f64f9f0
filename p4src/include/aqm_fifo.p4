/* FIFO: tail drop at the buffer limit, nothing else. */
#ifndef _AQM_FIFO_P4_
#define _AQM_FIFO_P4_

control AqmFifo(in prediction_t pred, out verdict_t v) {
    apply {
        v.drop = pred.over_limit;
        v.early = false;
        v.reason = pred.over_limit ? REASON_LIMIT : REASON_NONE;
        v.s1 = 0;
        v.s2 = 0;
    }
}

#endif
