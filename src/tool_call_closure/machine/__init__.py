"""The state machine: the transition table, its compiled interpreter and the meanings of its names.

========================  ==================================================================
module                    what lives there
========================  ==================================================================
``table``                 load ``spec/machine.json`` and refuse a table that could not run faithfully
``context``               what an operation works on: the instance protocol, the run record,
                          one typed context per operation
``semantics``             what each guard, effect, result, observed kind and target rule means
``compiler``              generate one Python function per operation from the table (what runs)
``interpreter``           compile the table into dispatch tuples and run an operation by it
``diagram``               the table's state diagrams (Mermaid), as the README shows them
========================  ==================================================================

Values, ECMAScript rules and errors sit below this package; the public class
and the providers above it.  Nothing here imports a provider: export formats
are names in the table, bound to renderers by the public class.
"""
