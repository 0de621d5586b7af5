// Package diagram draws a machine's phase graph as a Mermaid
// stateDiagram-v2 and as a Graphviz digraph.
//
// It reads a [Machine]: the phases, by index, with what their boxes show,
// and the edges of the phase graph, every state and phase written as its
// string. The text it writes depends only on that, so it can be compared
// with a golden file. Package statemachine builds a Machine from a built
// machine; what an edge means is said in its label, drawn here.
package diagram
