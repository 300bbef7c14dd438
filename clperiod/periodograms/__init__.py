"""Period searches over light-curve catalogs: Lomb-Scargle (one and several terms), SuperSmoother,
and what they share (input checks, standardisation, folding, peak statistics).
"""
