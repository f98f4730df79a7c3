"""Anytime bounds on the partition function of discrete graphical models (Lou, Dechter & Ihler, 2017)."""
