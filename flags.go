package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"time"
)

// flagGroup declares flags under one heading of --help.
type flagGroup struct {
	set   *groupedFlags
	title string
	names []string
}

// groupedFlags is a flag set whose --help lists flags by group, each with
// its default and environment twin.
type groupedFlags struct {
	fs       *flag.FlagSet
	header   string // how to call the command, before the flags
	groups   []*flagGroup
	defaults map[string]string // what an empty default means, where it means something
}

// newFlags is command name's flag set; its --help, to out, starts with
// header.
func newFlags(name, header string, out io.Writer) *groupedFlags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(out)
	g := &groupedFlags{fs: fs, header: header, defaults: map[string]string{}}
	fs.Usage = func() { g.usage(fs.Output()) }
	return g
}

// group starts the flags of one heading of --help.
func (g *groupedFlags) group(title string) *flagGroup {
	fg := &flagGroup{set: g, title: title}
	g.groups = append(g.groups, fg)
	return fg
}

func (fg *flagGroup) add(name string) declared {
	fg.names = append(fg.names, name)
	return declared{fg.set, name}
}

// declared is a flag just declared, for saying what its default means.
type declared struct {
	set  *groupedFlags
	name string
}

// DefaultMeans says in --help what a flag's default means where the value
// alone does not ("the system's").
func (d declared) DefaultMeans(meaning string) { d.set.defaults[d.name] = meaning }

func (fg *flagGroup) String(p *string, name, value, usage string) declared {
	fg.set.fs.StringVar(p, name, value, usage)
	return fg.add(name)
}

func (fg *flagGroup) Bool(p *bool, name string, usage string) declared {
	fg.set.fs.BoolVar(p, name, false, usage)
	return fg.add(name)
}

func (fg *flagGroup) Int(p *int, name string, value int, usage string) declared {
	fg.set.fs.IntVar(p, name, value, usage)
	return fg.add(name)
}

func (fg *flagGroup) Float64(p *float64, name string, value float64, usage string) declared {
	fg.set.fs.Float64Var(p, name, value, usage)
	return fg.add(name)
}

func (fg *flagGroup) Duration(p *time.Duration, name string, value time.Duration, usage string) declared {
	fg.set.fs.DurationVar(p, name, value, usage)
	return fg.add(name)
}

// List declares a flag that may be repeated or hold a comma-separated list.
func (fg *flagGroup) List(p *listFlag, name, usage string) declared {
	fg.set.fs.Var(p, name, usage)
	return fg.add(name)
}

// envName is a flag's environment twin: --dns-resolver is
// PETSTORE_DNS_RESOLVER.
func envName(flagName string) string {
	return "PETSTORE_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// serveUsage is how to call petstore, at the top of its --help.
const serveUsage = `Usage:
  petstore [flags]          serve the API, its reference site and the dashboard
  petstore migrate [flags]  copy a bbolt data file into an empty PostgreSQL
                            database, or with --to-data FILE a database into
                            a new data file (petstore migrate --help lists its
                            flags)
  petstore unrevoke [flags] KEY_ID...
                            forget API keys' revocations, so that a backup or
                            dump restored on purpose brings the keys back
                            (petstore unrevoke --help lists its flags)
  petstore --version        print the version and the VCS revision, and exit

With no flags: plain HTTP on localhost:8080, data in ./petstore.db.
Every flag has an environment variable, named beside it in parentheses;
a flag on the command line wins over its variable.
`

// usage writes --help: the usage, then each group's flags.
func (g *groupedFlags) usage(w io.Writer) {
	fmt.Fprint(w, g.header)
	grouped := map[string]bool{}
	for _, group := range g.groups {
		fmt.Fprintf(w, "\n%s:\n", group.title)
		for _, name := range group.names {
			g.usageOf(w, g.fs.Lookup(name))
			grouped[name] = true
		}
	}
	// Flags declared outside a group still show (tests check this heading).
	other := false
	g.fs.VisitAll(func(f *flag.Flag) {
		if !grouped[f.Name] {
			if !other {
				fmt.Fprintf(w, "\n%s:\n", ungroupedTitle)
				other = true
			}
			g.usageOf(w, f)
		}
	})
}

// ungroupedTitle heads --help's flags declared without a group.
const ungroupedTitle = "Other"

func (g *groupedFlags) usageOf(w io.Writer, f *flag.Flag) {
	valueName, usage := flag.UnquoteUsage(f)
	if valueName != "" {
		valueName = " " + valueName
	}
	fmt.Fprintf(w, "  --%s%s   (%s)\n", f.Name, valueName, envName(f.Name))
	for _, line := range wrap(usage, 72) {
		fmt.Fprintf(w, "      %s\n", line)
	}
	def := f.DefValue
	if meaning, ok := g.defaults[f.Name]; ok {
		def = meaning
	} else if def == "" {
		def = "none"
	} else if def == "false" {
		def = "off"
	}
	fmt.Fprintf(w, "      default: %s\n", def)
}

// wrap cuts text into lines of at most width characters, at spaces.
func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(text) {
		if line != "" && len(line)+1+len(word) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += word
	}
	return append(lines, line)
}

// listFlag is a flag that may be repeated or hold a comma-separated list.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}

// parse parses args, then sets each flag args did not give from its
// environment twin, when set. It returns the flags args gave; non-flag
// args are an error unless positional. --help is flag.ErrHelp.
func (g *groupedFlags) parse(args []string, getenv func(string) string, positional bool) (given map[string]bool, err error) {
	fs := g.fs
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 && !positional {
		return nil, fmt.Errorf("unexpected argument %q (flags start with --)", fs.Arg(0))
	}
	given = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	fs.VisitAll(func(f *flag.Flag) {
		name := envName(f.Name)
		if v := getenv(name); v != "" && !given[f.Name] && err == nil {
			if setErr := fs.Set(f.Name, v); setErr != nil {
				err = fmt.Errorf("%s: %w", name, setErr)
			}
		}
	})
	return given, err
}
