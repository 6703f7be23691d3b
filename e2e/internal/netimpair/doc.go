// Package netimpair is a small software network for tests (Linux, root):
// each host is a network namespace whose only link is a TUN device, and a
// switch in the test process forwards the IPv4 packets between the TUN
// devices, dropping, delaying and reordering them as configured, or
// dropping all of a host's packets (a cut link: no FIN, no RST, packets
// simply stop). It stands in for `tc netem` on kernels without sch_netem;
// all traffic stays inside the namespaces the test made.
package netimpair
