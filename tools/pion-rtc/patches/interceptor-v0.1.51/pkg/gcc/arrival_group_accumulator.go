// SPDX-FileCopyrightText: 2026 The Pion community <https://pion.ly>
// SPDX-License-Identifier: MIT

// Patched copy of github.com/pion/interceptor v0.1.51 pkg/gcc/arrival_group_accumulator.go, compiled in its
// place through `go build -overlay` (tools/pion-rtc/overlay.sh; iwlab issue 35). The change, marked
// "iwlab:", is the burst test of libwebrtc's InterArrivalDelta::BelongsToBurst: a packet joins the current
// group as part of a burst only if its propagation delta, taken against the group's LATEST departure, is
// negative, and only within 100 ms (kMaxBurstDuration) of the group's first arrival. Upstream takes the
// departure delta against the group's FIRST departure, which grows with the group, and has no duration
// cap: behind a standing queue whose packets arrive at most 5 ms apart (1200 B at more than 1.92 Mbit/s)
// the group never closes, the delay-based estimator gets no measurement, and the loss-based estimate (only
// applied when the delay controller updates) is never applied either: the target freezes while the link
// drops 40 % of the packets.

package gcc

import (
	"time"

	"github.com/pion/interceptor/internal/cc"
)

// iwlab: libwebrtc's kMaxBurstDuration (modules/congestion_controller/goog_cc/inter_arrival_delta.cc).
const maxBurstDuration = 100 * time.Millisecond

type arrivalGroupAccumulator struct {
	interDepartureThreshold          time.Duration
	interArrivalThreshold            time.Duration
	interGroupDelayVariationTreshold time.Duration
}

func newArrivalGroupAccumulator() *arrivalGroupAccumulator {
	return &arrivalGroupAccumulator{
		interDepartureThreshold:          5 * time.Millisecond,
		interArrivalThreshold:            5 * time.Millisecond,
		interGroupDelayVariationTreshold: 0,
	}
}

func (a *arrivalGroupAccumulator) run(in <-chan []cc.Acknowledgment, agWriter func(arrivalGroup)) {
	init := false
	group := arrivalGroup{}
	var firstArrival, lastDeparture time.Time // iwlab: the group's first arrival and latest departure
	for acks := range in {
		for _, next := range acks {
			if !init {
				group = newArrivalGroup(next)
				firstArrival, lastDeparture = next.Arrival, next.Departure
				init = true

				continue
			}
			if next.Arrival.Before(group.arrival) {
				// ignore out of order arrivals
				continue
			}
			if next.Departure.After(group.departure) {
				// A sequence of packets which are sent within a burst_time interval
				// constitute a group.
				if interDepartureTimePkt(group, next) <= a.interDepartureThreshold {
					group.add(next)
					lastDeparture = laterOf(lastDeparture, next.Departure)

					continue
				}

				// A Packet which has an inter-arrival time less than burst_time and
				// an inter-group delay variation d(i) less than 0 is considered
				// being part of the current group of packets.
				// iwlab: the variation against the group's latest departure, within maxBurstDuration.
				if interArrivalTimePkt(group, next) <= a.interArrivalThreshold &&
					interArrivalTimePkt(group, next)-next.Departure.Sub(lastDeparture) <
						a.interGroupDelayVariationTreshold &&
					next.Arrival.Sub(firstArrival) < maxBurstDuration {
					group.add(next)
					lastDeparture = laterOf(lastDeparture, next.Departure)

					continue
				}

				agWriter(group)
				group = newArrivalGroup(next)
				firstArrival, lastDeparture = next.Arrival, next.Departure
			}
		}
	}
}

func laterOf(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}

	return a
}

func interArrivalTimePkt(group arrivalGroup, ack cc.Acknowledgment) time.Duration {
	return ack.Arrival.Sub(group.arrival)
}

func interDepartureTimePkt(group arrivalGroup, ack cc.Acknowledgment) time.Duration {
	return ack.Departure.Sub(group.departure)
}

// interGroupDelayVariationPkt is upstream's (unused by the patched run; kept for the package's own tests).
func interGroupDelayVariationPkt(group arrivalGroup, ack cc.Acknowledgment) time.Duration {
	return ack.Arrival.Sub(group.arrival) - ack.Departure.Sub(group.departure)
}
