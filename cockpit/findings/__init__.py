"""Findings: the run explaining itself. Each kind is data in the trainers' knowledge (keyed by
trait, like panels and built-in alert rules); one judge reads a run's metrics, completions and
checkpoints, live (in the supervisor) or replayed, and writes `finding` journal records with
their evidence (`cockpit.run.journal.finding`)."""
