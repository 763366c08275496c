"""Kills and chaos: processes killed, frozen or partitioned, Redis stopped or failing over."""
