from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("benchapp", "0004_target_permissions"),
    ]

    operations = [
        migrations.AlterField(
            model_name="target",
            name="kind",
            field=models.CharField(
                choices=[
                    ("mysql", "MySQL / MariaDB"),
                    ("postgres", "PostgreSQL"),
                    ("host", "Host / filesystem"),
                    ("redis", "Redis"),
                ],
                default="mysql",
                max_length=10,
            ),
        ),
    ]
