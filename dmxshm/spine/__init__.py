"""The spine: a pinned fixed-frequency loop that times CAN cycles."""
