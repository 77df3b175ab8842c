package webhook

// MaxHeld is maxHeld, for the tests.
const MaxHeld = maxHeld
