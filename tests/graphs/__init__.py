"""What runs inside a run: graphs, nodes, tools, gates and the models they call."""
