from django.apps import AppConfig


class NotebooksConfig(AppConfig):
    name = "launcher.notebooks"
    label = "notebooks"
    verbose_name = "Notebook sessions"

    def ready(self) -> None:
        from allocations.ledger import register_reservations

        from .ledger import session_reservations

        # Sessions reserve gpus x hours on the allocation ledger until they are charged.
        register_reservations(session_reservations, selects="session_ids")

        from allocations.sections import register_allocation_section

        from .pages import notebook_sections

        register_allocation_section(notebook_sections)
