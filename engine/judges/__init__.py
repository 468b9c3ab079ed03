"""Judges you can trust where it matters: several judges on one run, how each one decides, how
stable it is, what it costs, and a judge prompt calibrated on people's ratings.

- spec: a judge as named on the command line (``NAME`` or ``NAME@URL``), its price, the panel's
  aggregate grade.
- panel: every pair judged by each judge of a panel (each its own cache key and accounting), and
  the panel's grade.
- people: people's grade of a run's retrieved pairs (qrels, unjudged 0, ratings winning), and each
  judge's grades, read from the store.
- report: per judge, item agreement, decision agreement, stability and cost, and the cheapest
  judge whose decisions agree with people's as often as the best one's; the same across a suite.
- choice: the cheapest sufficient judge, the rule alone.
- repeat: ``--repeat N``: a seeded sample of pairs asked again, the cache bypassed.
- calibration: a prompt with people's rated examples, evaluated cross-fitted against the plain one.

The statistics they rest on are pure functions in engine/statistics/ (decisions.py, kendall.py,
retest.py, judge_vs_human.py, paired.py).
"""
