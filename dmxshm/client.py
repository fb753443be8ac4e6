"""The import path ``dmxshm.client``, kept: the module is :mod:`dmxshm.network.client`
(the same module object under both names), the outside agent's side of the agent slots
that :mod:`dmxshm.network.slot` serves over :mod:`dmxshm.shm.slot`'s ABI."""

import sys

from dmxshm.network import client

sys.modules[__name__] = client
