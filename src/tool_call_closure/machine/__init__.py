"""The state machine: the transition table, its compiled interpreter and the meanings of its names.

========================  ==================================================================
module                    what lives there
========================  ==================================================================
``table``                 load ``spec/machine.json`` and refuse a table that could not run faithfully
``table_types``           the validated table as frozen values (rows, effects, operations …)
``table_reading``         the typed readers of the table's JSON, each naming the path it refuses
``context``               what an operation works on: the instance protocol, one typed context per
                          operation, and which ``Run`` class the process uses
``run``                   the run record (``Run``): the whole committed state of an instance
                          (compiled with the machine when the compiled build runs)
``semantics``             what each guard, effect, result, observed kind and target rule means
``reading``               reading caller values (``read_key``) and the conversions normalizations share
``inliner``               how the generated code writes each name: the semantics' bodies inlined,
                          the context fields as locals, the source writer
``compiler``              write the table out as Python: one function per operation (generated at
                          import for any table but the shipped one)
``module_form``           the compiled table as a module of its own: imports, annotations, digests
``specialize``            each public method's fast entry point: ``enter_<op>`` with what the method
                          fixes folded in (``method_succeed`` …), written into the module
``table_facts``           what the table fixes of the machine's reads (its texts, a call's move for a
                          fixed status), folded into those entry points
``generated``             the shipped table so written, checked in: the machine that runs
                          (``python -m tool_call_closure.machine.regenerate`` rewrites it)
``interpreter``           compile the table into dispatch tuples, walk it (the definition), and
                          bind the compiled operations; ``TCC_MACHINE=walk`` runs the walk instead
``regenerate``            write ``generated.py``, or check that it is current
``build_compiled``        compile ``generated.py`` and its hot helpers with mypyc (optional: a C compiler, mypy)
``diagram``               the table's renderings for readers: state diagrams, the one-row-per-line listing
========================  ==================================================================

Values, ECMAScript rules and errors sit below this package; the public class
and the providers above it.  Nothing here imports a provider: export formats
are names in the table, bound to renderers by the public class.
"""
