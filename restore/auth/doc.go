// Package auth pre-provisions what cluster 0's infrastructure operator adopts
// instead of generating (the `postgres` Secret with the database credentials
// and the `assisted-servicelocal-auth` Secret with the EC P-256 key pair the
// service signs and checks tokens with), and mints the ES256 tokens
// (cluster_id claim) that clients still talking to the service need, such as
// the assisted-installer-controller.
//
// The operator keeps a pre-created `postgres` Secret's password and generates
// local-auth keys only when both keys are missing (research §3), so creating
// these Secrets first makes their content the service's. Nothing here logs or
// formats key material, passwords or tokens: Token and PostgresCredentials
// redact themselves when printed.
package auth
