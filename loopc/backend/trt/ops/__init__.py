"""Converters by op family; importing this package registers them all."""
