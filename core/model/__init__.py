"""The robot as a model: the mechanism graph, its joint constraints, rigid
groups, mobility, actuator read-off, servo data and limit values in files."""
