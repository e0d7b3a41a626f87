package output

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
)

// APIVersion is the apiVersion of the documents the plugin prints with -o: for scripts to read, not
// objects an API server serves. A field's meaning changes only with a new version.
const APIVersion = "plugin.liqo-janitor.io/v1alpha1"

// TypeMeta is the apiVersion and kind of a document the plugin prints.
func TypeMeta(kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: APIVersion, Kind: kind}
}

// Flag is -o, as kubectl's: a format of cli-runtime's JSON/YAML print flags (json, yaml, kyaml), or
// empty for the plugin's own tables. It refuses any other format as the command line is parsed, so that a
// wrong -o is a usage error and nothing is read or written.
type Flag struct {
	format string
	flags  *genericclioptions.JSONYamlPrintFlags
	// printer is one per command line: the YAML printer separates the documents it prints with ---.
	printer printers.ResourcePrinter
}

// AddFlag registers -o on cmd, with its completion.
func AddFlag(cmd *cobra.Command) *Flag {
	o := &Flag{flags: genericclioptions.NewJSONYamlPrintFlags()}
	formats := o.flags.AllowedFormats()
	cmd.Flags().VarP(o, "output", "o", "Output format, for scripts: "+strings.Join(formats, "|")+" (default: tables)")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(formats, cobra.ShellCompDirectiveNoFileComp))
	return o
}

func (o *Flag) String() string { return o.format }

// Type is what the help shows as the flag's value.
func (o *Flag) Type() string { return "format" }

// Set takes a format the print flags have a printer for.
func (o *Flag) Set(format string) error {
	if _, err := o.flags.ToPrinter(format); err != nil {
		return fmt.Errorf("use -o %s, or leave it out for tables", strings.Join(o.flags.AllowedFormats(), ", -o "))
	}
	o.format = format
	return nil
}

// Document reports whether -o asks for a document rather than tables.
func (o *Flag) Document() bool { return o != nil && o.format != "" }

// Print writes obj as the document -o asks for.
func (o *Flag) Print(out io.Writer, obj runtime.Object) error {
	if o.printer == nil {
		p, err := o.flags.ToPrinter(o.format)
		if err != nil {
			return err
		}
		o.printer = p
	}
	return o.printer.PrintObj(obj, out)
}

// Progress is where a command writes what is not the document (its progress lines, prompts and notes):
// stdout beside the tables, stderr with -o, so that stdout stays the document a script parses.
func (o *Flag) Progress(streams genericiooptions.IOStreams) io.Writer {
	if o.Document() {
		return streams.ErrOut
	}
	return streams.Out
}

// DeepCopyJSON is in's deep copy through JSON, for the DeepCopyObject of a document: a document holds
// nothing JSON does not carry.
func DeepCopyJSON[T any](in *T) *T {
	out := new(T)
	data, err := json.Marshal(in)
	if err == nil {
		err = json.Unmarshal(data, out)
	}
	if err != nil {
		panic(fmt.Sprintf("deep-copying a %T: %v", in, err))
	}
	return out
}
