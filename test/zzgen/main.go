package main

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/kubectl-assisted/kubectl-assisted/test/assisted"
	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

type tb struct{ testing.TB }

func (tb) Helper()                         {}
func (tb) Fatalf(f string, a ...any)       { panic(fmt.Sprintf(f, a...)) }
func (tb) Fatal(a ...any)                  { panic(fmt.Sprint(a...)) }
func (tb) Logf(f string, a ...any)         {}

func main() {
	url := os.Args[1]
	harness.LoadSQLFile(tb{}, url, harness.AssistedSchemaPath())
	if err := assisted.Generate(context.Background(), url, assisted.Bench); err != nil {
		panic(err)
	}
	fmt.Println("ok")
}
