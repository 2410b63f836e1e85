// Command dag shows the runner's run queue and the data that flows along
// it: units that depend on each other are applied in dependency order and
// destroyed in the reverse order, independent units run alongside, and a
// unit gets the outputs of the units it depends on.
//
// Stack plat-ue2-dev has four instances:
//
//	network/vpc                  the vpc component: outputs vpc_id, subnet_ids
//	elasticache/redis-cluster-1  depends on network/vpc, placed in it
//	elasticache/redis-cluster-2  depends on network/vpc, placed in it
//	elasticache/redis-cluster-3  independent
//
// A cluster in the VPC has a Unit.Generate: right before it starts, in the
// same Run, it gets the VPC's result and writes its outputs into a tfvars
// file. The example prints the order of apply and of destroy (Runner.Order,
// a dry run), then applies and destroys, printing when each unit starts and
// ends, and what each cluster received. It works offline.
//
// main.go is the part to copy; it uses only the SDK's public packages.
// offline.go is the stand-in that serves a small provider from a loopback
// registry so the example runs with no network: delete it when copying,
// and name your own components and registry.
package main
