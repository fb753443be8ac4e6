"""Moved to :mod:`dmxshm.policies` (the network and the spine share it); kept importable."""

from dmxshm.policies import BUILTINS as BUILTINS
from dmxshm.policies import AgentError as AgentError
from dmxshm.policies import Idle as Idle
from dmxshm.policies import LaneFollow as LaneFollow
from dmxshm.policies import Policy as Policy
from dmxshm.policies import RandomWheels as RandomWheels
from dmxshm.policies import agent_spec as agent_spec
from dmxshm.policies import as_wheels as as_wheels
from dmxshm.policies import load_policy as load_policy
from dmxshm.policies import resolve as resolve
