"""Alert rules checked by the supervisor with nobody attached: conditions, built-in rule sets,
notifications and the early stop."""
