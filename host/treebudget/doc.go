// Package treebudget owns the tree budget: the one file a tree of nested
// supervisors shares (the root creates it, each nested supervisor finds it
// through AVENOR_TREE_BUDGET) to hold the tree to one count of executing
// runtimes. Each supervisor reserves a slot per runtime it starts and
// releases it when the runtime stops; every read-modify-write holds an
// flock, and reservations of supervisors that died are reaped by the next
// reader. A file that cannot be created or used degrades the budget: only
// each supervisor's own --max-runtimes applies, and the reason is kept for
// tree_budget to report. It is its own package because it is a protocol
// between processes, with no part in how one supervisor runs its runtimes.
package treebudget
