"""Plan cache: stored tool sequences, looked up for a new request and rewarded by their outcome."""
