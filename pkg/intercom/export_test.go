package intercom

// WentAway is wentAway, for the external tests.
var WentAway = wentAway
