// Package provider is the protocol-6 server of the tfitest test provider: a
// real Terraform provider, built with terraform-plugin-go, that the SDK's
// tests install through mirrors and registries and run with real Terraform.
//
// It keeps no state outside Terraform's own state, talks to nothing and
// starts no goroutines, so any number of copies may run in parallel. It
// offers:
//
//   - resource tfitest_item: required name, optional payload, computed id
//     ("item-" + name, unknown while planning a create). Changing name
//     replaces the resource, changing payload updates it in place. Import
//     takes the name as the import ID.
//   - data source tfitest_echo: result is a copy of value.
//   - TFITEST_ALLOC_MIB=N in its environment (AllocEnv): once configured,
//     it allocates and touches N MiB and holds them until it exits
//     (TFITEST_ALLOC_HOLD: stays in ConfigureProvider that long), so
//     memory scheduling is tested on real resident memory.
//   - TFITEST_START_ALLOC_MIB=N (StartAllocEnv): StartUp, which the
//     provider's main calls before it serves, allocates and touches N MiB
//     and releases them before the handshake: heavy only while starting.
//     TFITEST_START_TOGETHER=DIR:K (StartTogetherEnv) makes K such
//     start-ups hold their allocation at once, whatever the timing.
//
// Everything else in the protocol (functions, ephemeral resources, identity,
// moves) answers with an empty response or an "unsupported" diagnostic.
package provider
