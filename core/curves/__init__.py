"""Actuator curves: values, derivatives and limit checks, the violations they
report, and resampling to a device rate."""
