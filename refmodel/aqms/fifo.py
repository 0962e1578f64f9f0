"""FIFO: the queue model's limit alone (a packet limit like pfifo, a byte limit like bfifo), no AQM."""

from .spec import AqmSpec, KernelPeer

SPEC = AqmSpec(
    name="fifo", colour="tab:gray", selector_id=0,
    model="refmodel.fifo:Fifo",
    p4=("p4src/include/aqm_fifo.p4",),
    tests=("tests/test_queue_model.py",),
    kernel=(KernelPeer("pfifo", "black"),),
)
