package operator

// ShardParents is shardParents, for the external tests.
var ShardParents = shardParents
