
BreducedJŒI