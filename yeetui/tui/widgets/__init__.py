"""Widgets: plain data in through methods and attributes, Textual messages out."""
