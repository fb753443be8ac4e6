"""The import path ``dmxshm.replay``, kept: the module is :mod:`dmxshm.network.replay`
(the same module object under both names), beside the network's recording
(:mod:`dmxshm.network.recording`, :mod:`dmxshm.network.taps.log`) and the realtime
replay (:mod:`dmxshm.network.realtime_replay`)."""

import sys

from dmxshm.network import replay

sys.modules[__name__] = replay
