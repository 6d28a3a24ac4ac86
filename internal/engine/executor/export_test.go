package executor

// ConflictPolls is conflictPolls, for the tests of the package's callers.
const ConflictPolls = conflictPolls
