// Package resources applies the custom resources of a bundle to cluster 0, in
// the order assisted-service needs (see Order, which gives the reason for each
// placement).
//
// A restore has two halves. NewPlan sorts the exported objects and runs the
// transforms (Transform): it drops server fields, finalizers and status, maps
// namespaces (metadata and the spec references), makes Agents and cluster 0's
// ClusterDeployment safe, turns a BareMetalHost's status into its status
// annotation, rewrites or removes node-0 status URLs, and records the owner
// references to re-link. A plan never talks to a cluster, so the database side
// (kube keys) can be computed from it before any object exists.
//
// Apply then checks the cluster before it changes anything (reachable, APIs
// served, what already exists and whether it conflicts with --existing=fail),
// applies each object with server-side apply under one field manager, re-links
// owner references to the new UIDs as parents are created, writes the status
// fields that must be restored, and returns a Result per object.
//
// Every object is annotated with the bundle digest (AnnotationBundleDigest), so
// a rerun of an interrupted restore recognizes its own objects and converges
// instead of reporting them as conflicts.
package resources
