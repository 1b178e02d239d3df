"""Emulated ``maya.api`` package (tests only; not Maya). See :mod:`maya`."""
