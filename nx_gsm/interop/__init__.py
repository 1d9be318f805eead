"""Conversions between nx_gsm's GsmGraph and other graph containers and files."""
