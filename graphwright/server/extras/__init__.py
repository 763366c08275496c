"""The protocols beside the Agent Server API.

Assistants as MCP tools and A2A agents, and the figures of `/metrics`.
"""
