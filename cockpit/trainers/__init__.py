"""The trainers the installed TRL ships: discovered facts (`registry`) plus what cannot be
introspected, as data (`knowledge`)."""
