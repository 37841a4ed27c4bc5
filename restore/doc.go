// Package restore turns a verified bundle into cluster 0's assisted-service state:
// the database (one transaction), the file storage (staged, then renamed), kube
// keys, Secrets and tokens, and the resources in the order assisted-service needs;
// it keeps a journal so a killed restore converges when run again, and writes the
// receipt that `wait-for restore-complete` reads. It never prints or imports cobra.
package restore
